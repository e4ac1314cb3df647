/* prov_cidr.h: IPv4 and IPv6 address ranges written as CIDR ("10.0.0.0/8",
 * "2001:db8::/32", or one address: "192.0.2.7" is /32, "::1" is /128) and
 * whether a client address falls in one or in a comma-separated list of
 * them (an API key's `addresses`, prov_key_controls.h). An IPv4-mapped IPv6
 * address (::ffff:192.0.2.7, what a dual-stack socket reports) is matched
 * as the IPv4 address it carries. No name is ever resolved. */
#ifndef PROV_CIDR_H
#define PROV_CIDR_H

#include "prov_common.h"

/* The most ranges a list may hold, and the longest list text. */
#define PROV_CIDR_LIST_MAX 64

typedef struct prov_cidr_t {
    int family;                 /* 4 or 6 */
    int bits;                   /* prefix length: 0-32 or 0-128 */
    unsigned char net[16];      /* the network, host bits cleared */
} prov_cidr_t;

/* Parses one range; APR_EINVAL when it is not an address with an optional
 * /length within its family's. Host bits are cleared ("10.1.2.3/8" is
 * 10.0.0.0/8). */
apr_status_t prov_cidr_parse(prov_cidr_t *c, const char *text);
/* The range as text in its canonical form ("10.0.0.0/8", "2001:db8::/32"). */
const char *prov_cidr_text(const prov_cidr_t *c, apr_pool_t *p);
/* Non-zero when addr (an address as httpd writes r->useragent_ip) is in c;
 * 0 for anything that is not an address. */
int prov_cidr_match(const prov_cidr_t *c, const char *addr);
/* Non-zero when addr is in one of the ranges of list (canonical ranges
 * separated by commas, as prov_cidr_list_parse writes). */
int prov_cidr_list_match(const char *list, const char *addr);
/* Parses the ranges of items (const char * elements) into their canonical
 * list text; APR_EINVAL with *bad the first item that is not a range (or
 * NULL when there are too many or none). */
apr_status_t prov_cidr_list_parse(const char **list, const char **bad,
                                  const apr_array_header_t *items, apr_pool_t *p);

#endif
