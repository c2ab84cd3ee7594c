// Scene flags and number parsing for the MPM programs.
#include "arenafem/apps/mpm/options.hpp"

#include <string>
#include <vector>

#include "arenafem/memory/error.hpp"

namespace afem::apps::mpm {

bool parse_scene_flag(std::string_view flag, std::string_view value, SceneOptions& options) {
  if (flag == "--scene") {
    options.kind = parse_scene(value);
  } else if (flag == "--dim") {
    options.dimension = static_cast<int>(parse_integer(flag, value, 2, 3));
  } else if (flag == "--resolution") {
    options.resolution = static_cast<int>(parse_integer(flag, value, 16, 4096));
  } else if (flag == "--particles-per-cell") {
    options.particles_per_cell = static_cast<int>(parse_integer(flag, value, 1, 8));
  } else if (flag == "--dt") {
    options.dt = parse_positive(flag, value);
  } else if (flag == "--basis") {
    options.basis = parse_basis(value);
  } else if (flag == "--preconditioner") {
    options.pressure_preconditioner = parse_pressure_preconditioner(value);
  } else {
    return false;
  }
  return true;
}

std::string scene_flags_help(const Program& program) {
  std::vector<SceneKind> scenes;
  for (const SceneKind kind : {SceneKind::sand_column, SceneKind::elastic_drop,
                               SceneKind::dam_break, SceneKind::still_water}) {
    if (!program.incompressible || holds_fluid(kind)) {
      scenes.push_back(kind);
    }
  }
  // Continuation lines start under the first name and stay within 80 columns.
  const std::string indent(28, ' ');
  std::string text = "  --scene NAME" + std::string(indent.size() - 14, ' ');
  std::size_t line_start = 0;
  for (std::size_t i = 0; i < scenes.size(); ++i) {
    std::string name = to_string(scenes[i]);
    if (scenes[i] == program.default_scene) {
      name += " (default)";
    }
    if (i + 2 < scenes.size()) {
      name += ",";
    } else if (i + 2 == scenes.size()) {
      name += " or";
    }
    if (i > 0) {
      if (text.size() - line_start + 1 + name.size() > 80) {
        text += "\n";
        line_start = text.size();
        text += indent;
      } else {
        text += " ";
      }
    }
    text += name;
  }
  const std::string preconditioner =
      program.incompressible
          ? "  --preconditioner NAME     of the pressure solve: multigrid (default) or jacobi\n"
            "                            (with --basis bspline2 the solve takes Jacobi)\n"
          : "";
  return text + "\n" +
         "  --dim 2|3                 dimension (default 2)\n"
         "  --resolution N            grid cells along each axis of the unit box\n"
         "                            (default 128 in 2D, 40 in 3D)\n"
         "  --particles-per-cell N    particles along each axis of a cell (default 2)\n"
         "  --dt SECONDS              time step (default 0.4 dx / wave speed)\n"
         "  --basis q1|bspline2       grid basis of transfers: multilinear (default) or\n"
         "                            quadratic B-splines\n" +
         preconditioner;
}

CommandLine parse_command_line(std::span<const std::string_view> arguments,
                               const Program& program) {
  CommandLine options;
  std::string_view scene_flag;
  options.scene.kind = program.default_scene;
  options.scene.incompressible = program.incompressible;
  for (std::size_t i = 0; i < arguments.size(); ++i) {
    const std::string_view flag = arguments[i];
    if (flag == "--help" || flag == "-h") {
      options.help = true;
      continue;
    }
    if (flag == "--memory-report") {
      options.memory_report = true;
      continue;
    }
    if (flag == "--ascii") {
      options.ascii = true;
      continue;
    }
    if (flag == "--capture") {
      options.capture = true;
      continue;
    }
    if (i + 1 >= arguments.size()) {
      throw Error(std::string(program.name) + ": " + std::string(flag) +
                  " needs a value (see --help)");
    }
    const std::string_view value = arguments[++i];
    if (flag == "--preconditioner" && !program.incompressible) {
      throw Error(std::string(program.name) +
                  ": --preconditioner sets the incompressible fluid's pressure solve "
                  "(apic_fluid); this program has none");
    }
    if (parse_scene_flag(flag, value, options.scene)) {
      scene_flag = flag;
      continue;
    }
    if (flag == "--steps") {
      options.steps = parse_integer(flag, value, 0, std::int64_t{1} << 40);
    } else if (flag == "--every") {
      options.every = parse_integer(flag, value, 1, std::int64_t{1} << 40);
    } else if (flag == "--out") {
      options.out = value;
    } else if (flag == "--checkpoint-every") {
      options.checkpoint_every = parse_integer(flag, value, 1, std::int64_t{1} << 40);
    } else if (flag == "--restart") {
      options.restart = value;
    } else if (flag == "--sort-every") {
      options.sort_every = static_cast<int>(parse_integer(flag, value, 0, 1 << 30));
    } else {
      throw Error(std::string(program.name) + ": unknown option '" + std::string(flag) +
                  "' (see --help)");
    }
  }
  if (!options.restart.empty() && !scene_flag.empty()) {
    throw Error(std::string(program.name) + ": " + std::string(scene_flag) +
                " cannot be given with --restart, which takes the setup from the checkpoint");
  }
  return options;
}

}  // namespace afem::apps::mpm
