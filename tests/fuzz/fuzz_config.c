/* fuzz_config: coschedd.yaml through config_load (libyaml) and config_validate, as the
 * daemon reads it at start and on SIGHUP. Property: a file that loads either validates or is
 * refused with a message; a refused file leaves a message too. */
#include <stdio.h>
#include <unistd.h>

#include "config.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64], err[512] = "";
    int fd = fuzz_input_file(data, size, path, sizeof path);
    if (fd < 0)
        return 0;
    config_t cfg;
    config_defaults(&cfg);
    if (config_load(&cfg, path, true, err, sizeof err) == 0)
        config_validate(&cfg, err, sizeof err);
    else if (!err[0])
        fuzz_fail("config_load refused a file without saying why");
    close(fd);
    return 0;
}
