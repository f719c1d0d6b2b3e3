/* versions.c - linked library versions (see versions.h). */
#include "base/versions.h"

#include <event2/event.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <xxhash.h>

void fti_base_versions(char *libevent, char *openssl, char *xxhash, size_t len)
{
    unsigned xv = XXH_versionNumber();
    snprintf(libevent, len, "%s", event_get_version());
    snprintf(openssl, len, "%s", OpenSSL_version(OPENSSL_VERSION));
    snprintf(xxhash, len, "%u.%u.%u", xv / 10000, xv / 100 % 100, xv % 100);
}
