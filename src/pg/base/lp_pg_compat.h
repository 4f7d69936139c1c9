/*
 * lp_pg_compat.h - what differs between the PostgreSQL majors lance_parts
 * builds against (15 to 18), in one place.  The sources are written against
 * the newest major's API; for an older major each name below stands for its
 * older equivalent.  Include it after postgres.h.
 */
#ifndef LP_PG_COMPAT_H
#define LP_PG_COMPAT_H

#include "commands/explain.h"
#include "commands/vacuum.h"
#include "optimizer/pathnode.h"
#include "utils/acl.h"
#include "utils/backend_status.h"
#include "utils/lsyscache.h"
#include "utils/rangetypes.h"

#if PG_VERSION_NUM >= 180000
/* 18 split ExplainState and the ExplainProperty functions out of explain.h */
#include "commands/explain_format.h"
#include "commands/explain_state.h"
#endif

/* 18: a specifier before the declaration instead of an attribute after it */
#if PG_VERSION_NUM < 180000
#define pg_noreturn pg_attribute_noreturn()
#endif

/* 16 let make_range report a bad range softly, into escontext */
#if PG_VERSION_NUM < 160000
#define make_range(typcache, lower, upper, empty, escontext) make_range(typcache, lower, upper, empty)
#endif

/*
 * 16 replaced the ACL check functions of each catalog by object_aclcheck;
 * lance_parts checks foreign servers only.
 */
#if PG_VERSION_NUM < 160000
#define object_aclcheck(classid, objectid, roleid, mode) \
	(AssertMacro((classid) == ForeignServerRelationId), pg_foreign_server_aclcheck(objectid, roleid, mode))
#endif

/*
 * create_foreignscan_path: 17 added fdw_restrictinfo (the quals a join's
 * outer path must check), 18 disabled_nodes (the count of disabled plan
 * nodes below, which replaced disable_cost).
 */
#if PG_VERSION_NUM < 170000
#define create_foreignscan_path(root, rel, target, rows, disabled_nodes, startup_cost, total_cost, \
								pathkeys, required_outer, fdw_outerpath, fdw_restrictinfo, fdw_private) \
	create_foreignscan_path(root, rel, target, rows, startup_cost, total_cost, pathkeys, \
							required_outer, fdw_outerpath, fdw_private)
#elif PG_VERSION_NUM < 180000
#define create_foreignscan_path(root, rel, target, rows, disabled_nodes, startup_cost, total_cost, \
								pathkeys, required_outer, fdw_outerpath, fdw_restrictinfo, fdw_private) \
	create_foreignscan_path(root, rel, target, rows, startup_cost, total_cost, pathkeys, \
							required_outer, fdw_outerpath, fdw_restrictinfo, fdw_private)
#endif

/* 18 tells the cost-based delay whether ANALYZE or VACUUM is sleeping */
#if PG_VERSION_NUM < 180000
#define vacuum_delay_point(is_analyze) vacuum_delay_point()
#endif

/* 17 renamed the lookup of the local copy of a backend's status by index (1-based) */
#if PG_VERSION_NUM < 170000
#define pgstat_get_local_beentry_by_index(index) pgstat_fetch_stat_local_beentry(index)
#endif

/*
 * 18 generalised the interpretation of btree operators to every index access
 * method, with a generic comparison type instead of a btree strategy.
 */
#if PG_VERSION_NUM < 180000
#define OpIndexInterpretation OpBtreeInterpretation
#define get_op_index_interpretation(opno) get_op_btree_interpretation(opno)
#define LP_INTERPRETATION_IS_EQUALITY(interpretation) ((interpretation)->strategy == BTEqualStrategyNumber)
#else
#define LP_INTERPRETATION_IS_EQUALITY(interpretation) ((interpretation)->cmptype == COMPARE_EQ)
#endif

/* 18 records a pathkey's direction as a generic comparison type instead of a btree strategy */
#if PG_VERSION_NUM < 180000
#define LP_PATHKEY_IS_ASCENDING(pathkey) ((pathkey)->pk_strategy == BTLessStrategyNumber)
#else
#define LP_PATHKEY_IS_ASCENDING(pathkey) ((pathkey)->pk_cmptype == COMPARE_LT)
#endif

/* 18 lets heap_form_minimal_tuple reserve extra bytes before the tuple */
#if PG_VERSION_NUM < 180000
#define heap_form_minimal_tuple(desc, values, isnull, extra) heap_form_minimal_tuple(desc, values, isnull)
#endif

#endif							/* LP_PG_COMPAT_H */
