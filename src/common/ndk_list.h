/* ndk_list: an intrusive circular doubly linked list (the kernel's list_head shape), because
 * every object table in the runtime and providers needs O(1) unlink without allocation. */
#ifndef NDK_LIST_H
#define NDK_LIST_H

#include <stddef.h>

struct ndk_list {
    struct ndk_list *next, *prev;
};

#define NDK_LIST_INIT(name) { &(name), &(name) }
#define ndk_container_of(ptr, type, member) ((type *)((char *)(ptr) - offsetof(type, member)))
#define ndk_list_entry(ptr, type, member) ndk_container_of(ptr, type, member)
#define ndk_list_for_each(pos, head) for ((pos) = (head)->next; (pos) != (head); (pos) = (pos)->next)
#define ndk_list_for_each_safe(pos, tmp, head) \
    for ((pos) = (head)->next, (tmp) = (pos)->next; (pos) != (head); (pos) = (tmp), (tmp) = (pos)->next)

static inline void ndk_list_init(struct ndk_list *l) { l->next = l->prev = l; }
static inline int ndk_list_empty(const struct ndk_list *l) { return l->next == l; }
static inline void ndk_list_add_tail(struct ndk_list *head, struct ndk_list *n)
{
    n->prev = head->prev;
    n->next = head;
    head->prev->next = n;
    head->prev = n;
}
static inline void ndk_list_del(struct ndk_list *n)
{
    n->prev->next = n->next;
    n->next->prev = n->prev;
    n->next = n->prev = n;
}

#endif
