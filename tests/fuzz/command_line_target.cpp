// Fuzz target body: the MPM programs' command line and scene building.
#include <cstdlib>
#include <string_view>
#include <vector>

#include "arenafem/apps/mpm/options.hpp"
#include "arenafem/apps/mpm/scene.hpp"
#include "arenafem/memory/error.hpp"
#include "targets.hpp"

namespace afem::test {

namespace {
void require(bool condition) {
  if (!condition) {
    std::abort();  // accepted options out of range: a finding
  }
}
}  // namespace

bool fuzz_command_line_input(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string_view> arguments;
  std::size_t start = 0;
  while (start <= text.size() && arguments.size() < 32) {
    const std::size_t end = text.find('\0', start);
    arguments.push_back(text.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) {
      break;
    }
    start = end + 1;
  }
  const apps::mpm::Program program{"fuzz", "", apps::mpm::SceneKind::sand_column, false};
  try {
    const apps::mpm::CommandLine options = apps::mpm::parse_command_line(arguments, program);
    require(options.steps >= 0 && options.every >= 1);
    const apps::mpm::SceneOptions& scene = options.scene;
    require(scene.dimension == 2 || scene.dimension == 3);
    // Build the scene only where it stays small (the fuzzer's memory is bounded).
    if (scene.resolution > 0 && scene.resolution <= 48 && scene.particles_per_cell <= 3) {
      const apps::mpm::Setup built = apps::mpm::make_scene(scene);
      require(built.particles.positions.size() ==
              built.particles.volumes.size() * static_cast<std::size_t>(built.dimension));
      require(built.dt > 0.0);
    }
  } catch (const Error&) {
    return false;
  }
  return true;
}

}  // namespace afem::test
