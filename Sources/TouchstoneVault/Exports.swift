// The vault stores the model's types: access controls, item attributes.
@_exported import TouchstoneModel
