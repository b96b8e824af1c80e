/*
 * reason.c — names and one-line descriptions of the rejection reasons,
 * generated from the one list in kctx/image.h so they cannot drift.
 */
#include <kctx/image.h>

const char *kctx_image_reason_name(kctx_image_reason r) {
    switch (r) {
#define KCTX_IMAGE_REASON_NAME_(name, num, msg) \
    case KCTX_IMAGE_##name:                     \
        return "KCTX_IMAGE_" #name;
        KCTX_IMAGE_REASON_MAP(KCTX_IMAGE_REASON_NAME_)
#undef KCTX_IMAGE_REASON_NAME_
    }
    return "KCTX_IMAGE_UNKNOWN_REASON";
}

const char *kctx_image_reason_string(kctx_image_reason r) {
    switch (r) {
#define KCTX_IMAGE_REASON_STRING_(name, num, msg) \
    case KCTX_IMAGE_##name:                       \
        return msg;
        KCTX_IMAGE_REASON_MAP(KCTX_IMAGE_REASON_STRING_)
#undef KCTX_IMAGE_REASON_STRING_
    }
    return "unknown rejection reason";
}
