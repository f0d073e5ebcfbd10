// The one precompiled header of the build (see cmake/LengenWarnings.cmake). Headers here are
// parsed once; every in-tree TU reuses the result.
#pragma once
#include <torch/torch.h>
#include <yaml-cpp/yaml.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>
#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>
