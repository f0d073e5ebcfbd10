#pragma once

/// Marks a class or function as part of liblengen's public ABI. Everything else in the
/// library is hidden (-fvisibility=hidden), so typeinfo and vtables of exported classes are
/// unique across dlopen'ed plugins: dynamic_cast and lengen::Error work across the boundary.
#define LENGEN_API __attribute__((visibility("default")))
