#ifndef TOUCHSTONE_CSQLITE_SHIM_H
#define TOUCHSTONE_CSQLITE_SHIM_H
#include <sqlite3.h>
// SQLITE_TRANSIENT is a cast macro Swift cannot import.
static const sqlite3_destructor_type ts_sqlite_transient = (sqlite3_destructor_type)-1;
// sqlite3_db_config is variadic, which Swift cannot call: the one option
// Touchstone sets. A connection that found damage must not checkpoint its
// write-ahead log into the damaged file when it closes.
static inline int ts_sqlite_no_checkpoint_on_close(sqlite3 *db) {
    return sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, (int *)0);
}
#endif
