#ifndef TOUCHSTONE_CSQLITE_SHIM_H
#define TOUCHSTONE_CSQLITE_SHIM_H
#include <sqlite3.h>
// SQLITE_TRANSIENT is a cast macro Swift cannot import.
static const sqlite3_destructor_type ts_sqlite_transient = (sqlite3_destructor_type)-1;
#endif
