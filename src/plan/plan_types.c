/* SPDX-License-Identifier: Apache-2.0 */
#include "plan/internal.h"
void plan_infer(em_plan *plan) { (void)plan; }
