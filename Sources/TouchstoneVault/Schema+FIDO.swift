/// The FIDO credentials' table (docs/fido.md, "What is stored").
extension Schema {
    /// 6 -> 7: FIDO credentials, one row each: the TPM's signing key (its
    /// blob and wrapped authValue, as an ssh key's), the records that say
    /// whom it is for, and its signature counter. The id and the relying
    /// party are never in clear: keyed lookup hashes, and the metadata AEAD.
    static let fidoCredentials = """
        CREATE TABLE fido_credentials (
            id       INTEGER PRIMARY KEY,
            lookup   BLOB NOT NULL UNIQUE, -- keyed hash of the credential id (the lookup key, its own domain)
            rp       BLOB NOT NULL,        -- keyed hash of the relying party (or ssh application)
            metadata BLOB NOT NULL,        -- AEAD(metadata key, id, relying party, user, options, access, created, public point); AD binds lookup
            counter  INTEGER NOT NULL DEFAULT 0, -- the last signature counter released; committed before the signature is
            tpm      BLOB NOT NULL,        -- SealedBlob of the P-256 key: its policy, TPM public and private areas
            keys     BLOB NOT NULL,        -- its authValue wrapped to the class keys (WrapCodec); empty without that branch
            cipher   INTEGER NOT NULL      -- RecordCipher of the metadata box
        );
        CREATE INDEX fido_credentials_by_rp ON fido_credentials(rp);
        """
}
