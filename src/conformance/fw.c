/*
 * fw.c — what fw.h defines besides the drivers and the arena (fw_pool.c):
 * the names of the driver statuses, for every driver's and probe's
 * messages.
 */
#include "fw.h"

const char *fw_status_name(fw_status s) {
    switch (s) {
#define FW_NAME_(name, msg) \
    case FW_##name:         \
        return "FW_" #name;
        FW_STATUS_MAP(FW_NAME_)
#undef FW_NAME_
    }
    return "FW_UNKNOWN";
}
