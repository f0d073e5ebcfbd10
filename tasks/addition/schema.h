#pragma once
// The addition task's option schema (its options, their defaults and documentation), apart
// from the task's code so that the schema reads as one table.
#include "lengen/config/schema.h"

namespace lengen::tasks {

/// The schema `lengen plugins` and docs/config-reference.md show for task 'addition'.
lengen::ComponentSpec addition_schema();

}  // namespace lengen::tasks
