#pragma once
// The built-in stage kinds' registration functions, one per file in this folder; called once
// when the library loads (stage.cpp), before anything reads stage_registry().
#include "lengen/experiment/stage_spec.h"

namespace lengen {

void register_train_stage(StageRegistry& r);           // train.cpp
void register_eval_stage(StageRegistry& r);            // eval.cpp
void register_self_label_stage(StageRegistry& r);      // self_label.cpp
void register_self_improve_stage(StageRegistry& r);    // self_improve.cpp
void register_compare_stages_stage(StageRegistry& r);  // compare_stages.cpp

}  // namespace lengen
