/*
 * build_internal.h — builder entry points for the image tests only (not
 * exported, not in kctx/image.h).
 */
#ifndef KCTX_IMAGE_BUILD_INTERNAL_H
#define KCTX_IMAGE_BUILD_INTERNAL_H

#include <kctx/image.h>

/* Like kctx_image_builder_finish, but returns the canonically laid out and
 * sealed image even when its content breaks a rule (a tensor after a
 * scalar, an empty blob, a dependency on a later task...). This is how the
 * fixture generator makes images that are invalid in exactly one respect.
 * Only representability failures (NO_MEMORY, sizes that do not fit the
 * format) are reported. */
kctx_build_status kctx_image_builder_finish_unvalidated(kctx_image_builder *b, void **out,
                                                        size_t *out_size, char *message,
                                                        size_t message_size);

#endif /* KCTX_IMAGE_BUILD_INTERNAL_H */
