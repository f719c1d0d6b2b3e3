/*
 * versions.h - the versions of the libraries the base layer uses, as
 * linked (for ftmpi-info --parsable and bug reports).
 */
#ifndef FTI_VERSIONS_H
#define FTI_VERSIONS_H

#include <stddef.h>

/* Writes "libevent X; OpenSSL Y; xxhash Z" style fields: each buffer gets
 * its library's version text (len bytes each). */
void fti_base_versions(char *libevent, char *openssl, char *xxhash, size_t len);

#endif
