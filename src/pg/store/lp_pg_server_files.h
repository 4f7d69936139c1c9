/*
 * lp_pg_server_files.h - the server's own small files, which are not dataset
 * storage: the target keys in $PGDATA and the progress records in
 * pg_stat_tmp, read and written through fd.c.
 */
#ifndef LP_PG_SERVER_FILES_H
#define LP_PG_SERVER_FILES_H

/*
 * Read the file at path: false when it does not exist.  Otherwise *size is
 * its size and, when that fits in capacity, its bytes are read into buffer,
 * *got of them (fewer only when it was cut meanwhile).  ERROR (naming path)
 * when it cannot be opened, examined or read.
 */
extern bool lp_server_file_read(const char *path, void *buffer, size_t capacity,
								size_t *size, size_t *got);

/*
 * Read exactly len bytes from the start of the file at path into buffer;
 * false, without an error, when it is missing or shorter.
 */
extern bool lp_server_file_read_exactly(const char *path, void *buffer, size_t len);

/*
 * Write data into a new file at temp, mode 0600, and fsync it: a file left
 * at temp (by a crashed backend) is removed first.  ERROR when it cannot be
 * created or written, with nothing left at temp.
 */
extern void lp_server_file_write_synced(const char *temp, const void *data, size_t len);

/*
 * Give the synced file temp the name path unless path exists already (the
 * file there is kept), remove temp and fsync directory.  ERROR, with temp
 * removed, when the link fails otherwise.
 */
extern void lp_server_file_link_unless_present(const char *temp, const char *path,
											   const char *directory);

/*
 * Rename the synced file temp to path, replacing it, and fsync directory.
 * ERROR, with temp removed, when the rename fails.
 */
extern void lp_server_file_rename(const char *temp, const char *path, const char *directory);

/*
 * Replace path with data through temp (written, then renamed), without
 * fsync and without any error: for records that may be lost (progress).
 */
extern void lp_server_file_replace_quietly(const char *temp, const char *path,
										   const void *data, size_t len);

/* Remove the file at path if it is there; errors are ignored. */
extern void lp_server_file_remove(const char *path);

/* Called with the name of each entry of a directory. */
typedef void (*LpServerFileCallback) (const char *name, void *arg);

/* Call callback for each entry of directory (ERROR if it cannot be read). */
extern void lp_server_files_each(const char *directory, LpServerFileCallback callback,
								 void *arg);

#endif							/* LP_PG_SERVER_FILES_H */
