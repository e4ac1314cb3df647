/* prov_schema_data.h: the migrations compiled into libprovider (generated from
 * schema/ by scripts/embed-schema.sh). Number 0 creates the version table. */
#ifndef PROV_SCHEMA_DATA_H
#define PROV_SCHEMA_DATA_H

typedef struct prov_migration_t {
    int version;             /* -1 ends the list */
    const char *name;
    const char *sqlite_sql;
    const char *pgsql_sql;
} prov_migration_t;

extern const prov_migration_t prov_migrations[];

#endif
