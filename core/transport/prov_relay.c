/* prov_relay.c: a gateway answer (Chat Completions or Messages, which share
 * this shape) made ours for the client: its "model" set to the public id
 * and the charge added to its "usage" as "credits". The fast way splices
 * the two into the gateway's own bytes, from what the scanner found
 * (prov_json_scan.h); the other builds them into json-c's tree and prints
 * it, for the answers the scanner declines. tests/fuzz/fuzz_chat_answer.c
 * checks that a client reads the same values either way. */
#include <string.h>
#include "prov_relay.h"
#include "prov_money.h"

const char *prov_relay_render(const prov_relay_t *rl, const char *public_id,
                              prov_micro_t charge, apr_pool_t *p)
{
    const prov_jobject_t *usage = &rl->usage;
    const prov_jmember_t *model = prov_json_scan_member(&rl->top, "model");
    char money[PROV_MONEY_BUFSIZE];
    const char *b = rl->body, *e, *cut[2], *resume[2], *ins[2];
    apr_size_t idn, mn, n, k[2];
    char *out, *w;
    int i, first;

    if (!model || !prov_json_scan_plain(public_id))
        return NULL;
    /* the object alone, without the white space around it */
    e = rl->top.close + 1;
    while (b < e && *b != '{')
        b++;
    prov_money_format_buf(money, charge);
    idn = strlen(public_id);
    mn = strlen(money);
    /* two edits, in the order they come in the text: the model's value
     * replaced, the credits inserted before usage's closing brace */
    first = model->val < usage->close ? 0 : 1;
    cut[first] = model->val;
    resume[first] = model->val + model->vlen;
    ins[first] = NULL;
    k[first] = idn + 2;
    cut[!first] = usage->close;
    resume[!first] = usage->close;
    ins[!first] = money;
    k[!first] = (usage->n ? 1 : 0) + 10 + mn;
    n = (apr_size_t)(e - b) - model->vlen + k[0] + k[1];
    w = out = apr_palloc(p, n + 1);
    for (i = 0; i < 2; i++) {
        memcpy(w, b, (apr_size_t)(cut[i] - b));
        w += cut[i] - b;
        if (ins[i]) {
            if (usage->n)
                *w++ = ',';
            memcpy(w, "\"credits\":", 10);
            memcpy(w + 10, money, mn);
            w += 10 + mn;
        }
        else {
            *w++ = '"';
            memcpy(w, public_id, idn);
            w += idn;
            *w++ = '"';
        }
        b = resume[i];
    }
    memcpy(w, b, (apr_size_t)(e - b));
    w += e - b;
    *w = '\0';
    return out;
}

const char *prov_relay_render_tree(json_object *answer, const char *public_id,
                                   prov_micro_t charge, apr_pool_t *p)
{
    json_object *usage = prov_json_get(answer, "usage", json_type_object);
    json_object_object_add(answer, "model", json_object_new_string(public_id));
    if (!usage) {
        usage = json_object_new_object();
        json_object_object_add(answer, "usage", usage);
    }
    json_object_object_add(usage, "credits", prov_json_credits(charge));
    return prov_json_dump(answer, p);
}
