/* prov_backup.c: the copy of a live SQLite database (prov_backup.h). SQLite's
 * VACUUM INTO writes a new database file from one read transaction: the
 * copy is the database as of the statement's start, consistent, compacted
 * and without a WAL of its own; in WAL mode the server's writers are not
 * held up (only a checkpoint waits for the reader to finish). The file is
 * created here exclusively first, so that an existing file is refused
 * rather than replaced, and removed again if the copy fails. */
#include <apr_file_io.h>
#include "prov_backup.h"
#include "prov_log.h"

apr_status_t prov_backup_sqlite(prov_store_t *s, const char *file, apr_pool_t *p)
{
    apr_file_t *f = NULL;
    apr_status_t rv;
    if (s->dialect != PROV_DIALECT_SQLITE)
        return APR_ENOTIMPL;
    rv = apr_file_open(&f, file, APR_FOPEN_WRITE | APR_FOPEN_CREATE | APR_FOPEN_EXCL,
                       APR_FPROT_UREAD | APR_FPROT_UWRITE, p);
    if (rv != APR_SUCCESS)
        return APR_STATUS_IS_EEXIST(rv) ? APR_EEXIST : rv;
    apr_file_close(f);
    /* An empty file is an empty database: VACUUM INTO writes into it. */
    rv = prov_store_raw(s, apr_pstrcat(p, "VACUUM INTO '",
                                       apr_dbd_escape(s->driver, p, file, s->handle), "'",
                                       NULL), p);
    if (rv != APR_SUCCESS) {
        prov_log(PROV_LOG_ERR, rv, "PROV01004: the copy of the database into %s failed", file);
        apr_file_remove(file, p);
    }
    return rv;
}
