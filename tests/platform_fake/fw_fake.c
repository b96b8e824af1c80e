/*
 * fw_fake.c — the fake platform's framework driver (tests/platform_fake):
 * the sim's driver (the fake platform runs the sim's ops), naming the fake
 * platform for the kernel contexts it creates.
 */
#include "fw.h"

#include <pthread.h>

const fw_driver *fw_fake_driver(void);
/* The sim's driver (platform/sim/fw_sim.c): the fake platform is the sim's
 * ops under another name, and its framework is the sim's. */
const fw_driver *fw_sim_driver(void);

static fw_driver g_driver;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void init(void) {
    g_driver = *fw_sim_driver();
    g_driver.name = "fake";
    g_driver.platform = "fake";
}

const fw_driver *fw_fake_driver(void) {
    pthread_once(&g_once, init);
    return &g_driver;
}
