/*
 * sim_module.c — modules (kernel code uploaded from bytes) and functions.
 */
#include "sim_elf.h"
#include "sim_internal.h"

#include <stdlib.h>
#include <string.h>

void simi_module_free_obj(simi_module *m) {
    if (m->dl) simelf_close(m->dl);
    free(m->fns);
    free(m);
}

sim_status sim_module_load(sim_module *module, const void *bytes, size_t size) {
    sim_status st = simi_enter(SIM_OP_MODULE_LOAD, -1);
    if (st) return st;
    if (!module || !bytes || size == 0)
        return simi_fail(SIM_INVALID_VALUE, "module or bytes NULL, or size 0");
    simi_device *dev = simi_cur_dev();
    if (atomic_load(&dev->lost)) return simi_fail(SIM_DEVICE_LOST, "device %d is lost", dev->index);
    pthread_mutex_lock(&g_sim.lock);
    st = simi_capture_restricted("sim_module_load");
    pthread_mutex_unlock(&g_sim.lock);
    if (st) return st;
    simi_module *m = calloc(1, sizeof *m);
    if (!m) return simi_fail(SIM_OUT_OF_MEMORY, "host allocation failed");
    m->dev = dev;
    atomic_init(&m->uses, 0);
    char msg[256];
    if (simelf_open(bytes, size, &m->dl, msg, sizeof msg) != 0) {
        free(m);
        return simi_fail(SIM_INVALID_MODULE, "%s", msg);
    }
    pthread_mutex_lock(&g_sim.lock);
    uint64_t h = simi_handle_new(SIMI_T_MODULE, dev->index, m);
    if (h) dev->n_modules++;
    pthread_mutex_unlock(&g_sim.lock);
    if (!h) {
        simi_module_free_obj(m);
        return simi_fail(SIM_OUT_OF_MEMORY, "handle table full");
    }
    *module = h;
    return SIM_OK;
}

sim_status sim_module_unload(sim_module module) {
    sim_status st = simi_enter(SIM_OP_MODULE_UNLOAD, simi_handle_device(module));
    if (st) return st;
    pthread_mutex_lock(&g_sim.lock);
    simi_module *m = simi_handle_get(module, SIMI_T_MODULE);
    if (!m)
        st = simi_fail(SIM_INVALID_HANDLE, "0x%llx is not a live module",
                       (unsigned long long)module);
    else if (atomic_load(&m->dev->lost))
        st = simi_fail(SIM_DEVICE_LOST, "device %d is lost", m->dev->index);
    if (!st) st = simi_capture_restricted("sim_module_unload");
    if (!st && atomic_load(&m->uses) > 0)
        st = simi_fail(SIM_ILLEGAL_STATE,
                       "%d kernel launches or graph nodes still use the module (enqueued, running "
                       "or captured)",
                       atomic_load(&m->uses));
    if (st) {
        pthread_mutex_unlock(&g_sim.lock);
        return st;
    }
    for (size_t i = 0; i < m->nfns; i++) {
        void *f = simi_handle_get(m->fns[i], SIMI_T_FUNCTION);
        simi_handle_free(m->fns[i]);
        free(f);
    }
    simi_handle_free(module);
    m->dev->n_modules--;
    pthread_mutex_unlock(&g_sim.lock);
    simi_module_free_obj(m);
    return SIM_OK;
}

sim_status sim_module_get_function(sim_function *fn, sim_module module, const char *name) {
    sim_status st = simi_enter(SIM_OP_MODULE_GET_FUNCTION, simi_handle_device(module));
    if (st) return st;
    if (!fn || !name) return simi_fail(SIM_INVALID_VALUE, "fn or name is NULL");
    pthread_mutex_lock(&g_sim.lock);
    simi_module *m = simi_handle_get(module, SIMI_T_MODULE);
    if (!m) {
        pthread_mutex_unlock(&g_sim.lock);
        return simi_fail(SIM_INVALID_HANDLE, "0x%llx is not a live module",
                         (unsigned long long)module);
    }
    void *sym = simelf_sym(m->dl, name);
    if (!sym) {
        pthread_mutex_unlock(&g_sim.lock);
        return simi_fail(SIM_NOT_FOUND, "no entry point '%s' in the module", name);
    }
    /* The same name yields the same handle. */
    for (size_t i = 0; i < m->nfns; i++) {
        simi_function *f = simi_handle_get(m->fns[i], SIMI_T_FUNCTION);
        if (f && (void *)f->entry == sym) {
            *fn = m->fns[i];
            pthread_mutex_unlock(&g_sim.lock);
            return SIM_OK;
        }
    }
    if (m->nfns == m->capfns) {
        size_t nc = m->capfns ? m->capfns * 2 : 8;
        sim_function *n = realloc(m->fns, nc * sizeof *n);
        if (!n) {
            pthread_mutex_unlock(&g_sim.lock);
            return simi_fail(SIM_OUT_OF_MEMORY, "host allocation failed");
        }
        m->fns = n;
        m->capfns = nc;
    }
    simi_function *f = calloc(1, sizeof *f);
    uint64_t h = f ? simi_handle_new(SIMI_T_FUNCTION, m->dev->index, f) : 0;
    if (!h) {
        free(f);
        pthread_mutex_unlock(&g_sim.lock);
        return simi_fail(SIM_OUT_OF_MEMORY, "host allocation failed or handle table full");
    }
    f->module = m;
    /* POSIX guarantees a data pointer from dlsym converts to a function pointer */
    memcpy(&f->entry, &sym, sizeof f->entry);
    m->fns[m->nfns++] = h;
    *fn = h;
    pthread_mutex_unlock(&g_sim.lock);
    return SIM_OK;
}

sim_status sim_function_address(sim_function fn, uint64_t *address) {
    sim_status st = simi_enter(SIM_OP_FUNCTION_ADDRESS, simi_handle_device(fn));
    if (st) return st;
    if (!address) return simi_fail(SIM_INVALID_VALUE, "address is NULL");
    pthread_mutex_lock(&g_sim.lock);
    simi_function *f = simi_handle_get(fn, SIMI_T_FUNCTION);
    if (f) memcpy(address, &(uint64_t){(uint64_t)(uintptr_t)f->entry}, sizeof *address);
    pthread_mutex_unlock(&g_sim.lock);
    return f ? SIM_OK
             : simi_fail(SIM_INVALID_HANDLE, "0x%llx is not a live function",
                         (unsigned long long)fn);
}
