/* vfy_rules: the table of verify rules, generated from VFY_RULE_LIST. */
#include "vfy_rules.h"

static const struct flt_verify_rule_info rules[VFY_RULE_COUNT] = {
#define VFY_ROW(tag, id, sev, sec, page, text) [VFY_##tag] = { id, sev, sec, page, text },
    VFY_RULE_LIST(VFY_ROW)
#undef VFY_ROW
};

/* Any context. */
const struct flt_verify_rule_info *flt_verify_rule_info(enum flt_verify_rule rule)
{
    if ((unsigned)rule >= VFY_RULE_COUNT)
        rule = VFY_USE_AFTER_CLOSE;
    return &rules[rule];
}
