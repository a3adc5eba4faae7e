/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Umbrella header: every public Ember header, from the core types up to the
 * layers that run plans (docs/api.md walks through running one). Programs
 * embedding Ember may include just this; library sources include the
 * specific headers they use.
 */
#ifndef EM_EMBER_H
#define EM_EMBER_H

#include "ember/status.h"
#include "ember/types.h"
#include "ember/memory.h"
#include "ember/column.h"
#include "ember/datum.h"
#include "ember/value_text.h"
#include "ember/hash.h"
#include "ember/tz.h"
#include "ember/chunk.h"
#include "ember/arrow.h"
#include "ember/parquet.h"
#include "ember/conf.h"
#include "ember/plan.h"
#include "ember/expr.h"
#include "ember/rowexpr.h"
#include "ember/ops.h"
#include "ember/rowops.h"
#include "ember/overrides.h"
#include "ember/profile.h"
#include "ember/runtime.h"
#include "ember/task.h"
#include "ember/lore.h"
#include "ember/spark.h"
#include "ember/tpch.h"

#endif
