/* filter_stack.c - the stack of filters over one NDK_ADAPTER instance: built by
 * ndk_rt_open_adapter over the provider's adapter (bottom layer first, so each adapter wrapper
 * has its lower object), closed by ndk_rt_close_adapter from the top. The adapter close is
 * blocking (NDKPI reference §5.1, docs/ndkpi.md): each layer passes it down, then waits until
 * every wrapper, request and held callback of its own is gone before it ends the instance.
 * Context: may block; never from an NDK callback; no lock held by the caller. */
#define _GNU_SOURCE
#pragma GCC visibility push(default)
#include <ndk/filter.h>
#pragma GCC visibility pop
#include "filter_internal.h"
#include "rt_internal.h"

#include <stdlib.h>

static void layer_end(struct nf_layer *layer)
{
    if (layer->adapter)
        nf_obj_destroy(layer->adapter);
    layer->adapter = NULL;
    if (layer->opened && layer->ops->close)
        layer->ops->close(layer->ctx);
    layer->opened = 0;
    pthread_cond_destroy(&layer->drain_cond);
    pthread_mutex_destroy(&layer->drain_lock);
}

static void stack_free(struct nf_stack *stack)
{
    for (int i = 0; i < stack->owned_count; i++)
        nf_module_free(stack->owned[i]);
    free(stack->owned);
    free(stack->layers);
    free(stack);
}

NTSTATUS nf_stack_open(struct ndk_rt *rt, struct ndk_filter_module *const *modules, int count, NDK_ADAPTER *bottom,
                       nf_close_bottom_fn close_bottom, void *close_ctx, const char *adapter_name,
                       struct nf_stack **out)
{
    *out = NULL;
    struct nf_stack *stack = calloc(1, sizeof *stack);
    if (stack) {
        stack->layers = calloc((size_t)count, sizeof *stack->layers);
        stack->owned = calloc((size_t)count, sizeof *stack->owned);
    }
    if (!stack || !stack->layers || !stack->owned) {
        for (int i = 0; i < count; i++)
            if (modules[i]->inproc)
                nf_module_free(modules[i]);
        if (stack) {
            free(stack->layers);
            free(stack->owned);
            free(stack);
        }
        return STATUS_INSUFFICIENT_RESOURCES;
    }
    stack->rt = rt;
    stack->count = count;
    stack->bottom = bottom;
    stack->close_bottom = close_bottom;
    stack->close_ctx = close_ctx;
    for (int i = 0; i < count; i++)
        if (modules[i]->inproc)
            stack->owned[stack->owned_count++] = modules[i];

    NTSTATUS st = STATUS_SUCCESS;
    int built = count;                       /* layers [built, count) are up */
    NDK_OBJECT_HEADER *lower = &bottom->Header;
    for (int i = count - 1; i >= 0; i--) {
        struct nf_layer *layer = &stack->layers[i];
        layer->stack = stack;
        layer->index = i;
        layer->module = modules[i];
        layer->ops = modules[i]->ops;
        layer->ctx = modules[i]->module_ctx;
        pthread_mutex_init(&layer->drain_lock, NULL);
        pthread_cond_init(&layer->drain_cond, NULL);
        built = i;
        if (layer->ops->open) {
            st = layer->ops->open(modules[i]->module_ctx, modules[i], adapter_name, &layer->ctx);
            if (!NT_SUCCESS(st)) {
                rt_log(rt, NDK_LOG_ERROR, "filter %s refused adapter %s: %s", modules[i]->name, adapter_name,
                       ndk_rt_status_name(st));
                break;
            }
        }
        layer->opened = 1;
        layer->adapter = nf_obj_new(layer, NdkObjectTypeAdapter, NULL);
        if (!layer->adapter) {
            st = STATUS_INSUFFICIENT_RESOURCES;
            break;
        }
        nf_obj_activate(layer->adapter, lower);
        lower = &layer->adapter->pub.hdr;
    }
    if (!NT_SUCCESS(st)) {
        for (int i = built; i < count; i++)
            layer_end(&stack->layers[i]);
        stack_free(stack);
        return st;
    }
    *out = stack;
    return STATUS_SUCCESS;
}

NDK_ADAPTER *nf_stack_top(const struct nf_stack *stack)
{
    return &stack->layers[0].adapter->pub.adapter;
}

void nf_layer_close_below(struct nf_layer *layer)
{
    struct nf_stack *stack = layer->stack;
    if (layer->index + 1 < stack->count)
        nf_layer_close_adapter(&stack->layers[layer->index + 1]);
    else
        stack->close_bottom(stack->close_ctx, stack->bottom);
}

void nf_layer_close_adapter(struct nf_layer *layer)
{
    ndk_filter_call c = { .fn = NDK_FILTER_FN_CLOSE_ADAPTER, .obj = layer->adapter };
    nf_dispatch(&c);
    if (!nf_call_forwarded(&c)) {
        /* The instance must end below whatever the filter decided. */
        rt_log(layer->stack->rt, NDK_LOG_ERROR, "filter %s did not forward the adapter close; closing below",
               layer->module->name);
        ndk_filter_next(&c);
    }
    /* Everything below is closed and every lower callback has returned; what is left in this
     * layer is callbacks a filter holds (and the objects they keep). */
    pthread_mutex_lock(&layer->drain_lock);
    while (layer->live > 0)
        pthread_cond_wait(&layer->drain_cond, &layer->drain_lock);
    pthread_mutex_unlock(&layer->drain_lock);
    layer_end(layer);
}

void nf_stack_close(struct nf_stack *stack)
{
    nf_layer_close_adapter(&stack->layers[0]);
    stack_free(stack);
}
