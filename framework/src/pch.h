// The one precompiled header of the build (see cmake/LengenWarnings.cmake). Headers here are
// parsed once; every in-tree TU reuses the result.
#pragma once
#include <torch/torch.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>
