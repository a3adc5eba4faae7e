/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Umbrella header: every public Ember header. Programs embedding Ember may
 * include just this; library sources include the specific headers they use.
 */
#ifndef EM_EMBER_H
#define EM_EMBER_H

#include "ember/status.h"
#include "ember/types.h"
#include "ember/memory.h"
#include "ember/column.h"
#include "ember/value_text.h"
#include "ember/hash.h"
#include "ember/arrow.h"
#include "ember/parquet.h"
#include "ember/tpch.h"

#endif
