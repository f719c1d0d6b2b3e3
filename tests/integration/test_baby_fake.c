/*
 * test_baby_fake.c - a misbehaving stand-in for ftmpi-baby (test_baby):
 * reads one command from fd 3, then, by BABY_FAKE_MODE:
 *   garbage  - answers 32 bytes of garbage
 *   close    - closes the channel and exits
 *   silent   - never answers (sleeps until killed)
 *   wrongseq - answers a well-formed reply with the wrong sequence number
 *   huge     - answers a reply header announcing a huge payload
 *   trickle  - answers half a header, then nothing
 *   refuse   - answers a well-formed reply with FT_ERR_STATE (a child that
 *              refuses the job key)
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comm/baby_chan.h"
#include "ftmpi_errors.h"

int main(void)
{
    const char *mode = getenv("BABY_FAKE_MODE");
    char buf[sizeof(fti_baby_hdr_t) + FTI_BABY_MAX_PAYLOAD];
    fti_baby_hdr_t h;
    if (mode == NULL || read(FTI_BABY_FD, buf, sizeof(buf)) <= 0)
        return 1;
    memcpy(&h, buf, sizeof(h));
    fti_baby_hdr_t r = {.magic = FTI_BABY_MAGIC, .version = FTI_BABY_VERSION,
                        .type = (uint16_t)(h.type | FTI_BABY_REPLY), .seq = h.seq};
    if (!strcmp(mode, "garbage")) {
        for (size_t i = 0; i < sizeof(buf); i++)
            buf[i] = (char)(i * 37 + 11);
        if (write(FTI_BABY_FD, buf, 32) != 32)
            return 1;
    } else if (!strcmp(mode, "close")) {
        return 0;
    } else if (!strcmp(mode, "wrongseq")) {
        r.seq = h.seq + 7;
        if (write(FTI_BABY_FD, &r, sizeof(r)) != sizeof(r))
            return 1;
    } else if (!strcmp(mode, "huge")) {
        r.len = 0x7fffffffu;
        if (write(FTI_BABY_FD, &r, sizeof(r)) != sizeof(r))
            return 1;
    } else if (!strcmp(mode, "refuse")) {
        r.rc = FT_ERR_STATE;
        if (write(FTI_BABY_FD, &r, sizeof(r)) != sizeof(r))
            return 1;
    } else if (!strcmp(mode, "trickle")) {
        if (write(FTI_BABY_FD, &r, sizeof(r) / 2) != sizeof(r) / 2)
            return 1;
    }
    for (;;)
        pause();
}
