// Setup: names, the derived time step and the checks that name each field.
#include "arenafem/apps/mpm/setup.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <limits>

#include "arenafem/memory/error.hpp"

namespace afem::apps::mpm {

std::string to_string(MaterialKind kind) {
  switch (kind) {
    case MaterialKind::elastic:
      return "elastic";
    case MaterialKind::sand:
      return "sand";
    case MaterialKind::fluid:
      return "fluid";
    case MaterialKind::incompressible_fluid:
      return "incompressible fluid";
  }
  return "unknown";
}

std::string to_string(GridBasis basis) {
  return basis == GridBasis::bspline2 ? "bspline2" : "q1";
}

GridBasis parse_basis(std::string_view name) {
  for (const GridBasis basis : {GridBasis::q1, GridBasis::bspline2}) {
    if (name == to_string(basis)) {
      return basis;
    }
  }
  throw Error("unknown basis '" + std::string(name) + "', expected q1 or bspline2");
}

std::string to_string(PressurePreconditioner preconditioner) {
  return preconditioner == PressurePreconditioner::jacobi ? "jacobi" : "multigrid";
}

PressurePreconditioner parse_pressure_preconditioner(std::string_view name) {
  for (const PressurePreconditioner p :
       {PressurePreconditioner::jacobi, PressurePreconditioner::multigrid}) {
    if (name == to_string(p)) {
      return p;
    }
  }
  throw Error("unknown preconditioner '" + std::string(name) + "', expected jacobi or multigrid");
}

std::string to_string(Boundary boundary) {
  switch (boundary) {
    case Boundary::slip:
      return "slip";
    case Boundary::sticky:
      return "sticky";
    case Boundary::open:
      return "open";
  }
  return "unknown";
}

std::int32_t Setup::cells(int axis) const {
  return static_cast<std::int32_t>(
      std::lround(extent[static_cast<std::size_t>(axis)] / cell_size()));
}

double Setup::time_step() const {
  if (dt > 0.0) {
    return dt;
  }
  double speed = 0.0;
  for (const Material& material : materials) {
    speed = std::max(speed, material.wave_speed());
  }
  return cfl * cell_size() / speed;
}

namespace {

void check(bool ok, const std::string& field, const std::string& message) {
  if (!ok) {
    throw Error("Setup." + field + ": " + message);
  }
}

std::string number(double value) {
  std::array<char, 32> text{};
  std::snprintf(text.data(), text.size(), "%g", value);
  return text.data();
}

/// "field[i]", built by appending (GCC 12 misreads "literal" + std::string as overlapping).
std::string indexed(const char* field, std::size_t i) {
  std::string text(field);
  text += '[';
  text += std::to_string(i);
  text += ']';
  return text;
}

bool positive(double value) {
  return std::isfinite(value) && value > 0.0;
}

void check_material(const Material& m, const std::string& field) {
  check(positive(m.density), field + ".density", number(m.density) + ", expected > 0 kg/m^3");
  switch (m.kind) {
    case MaterialKind::elastic:
    case MaterialKind::sand:
      check(positive(m.youngs_modulus), field + ".youngs_modulus",
            number(m.youngs_modulus) + ", expected > 0 Pa");
      check(std::isfinite(m.poisson_ratio) && m.poisson_ratio > -1.0 && m.poisson_ratio < 0.5,
            field + ".poisson_ratio", number(m.poisson_ratio) + ", expected in (-1, 0.5)");
      check(m.kind != MaterialKind::sand ||
                (m.friction_angle_degrees >= 0.0 && m.friction_angle_degrees < 90.0),
            field + ".friction_angle_degrees",
            number(m.friction_angle_degrees) + ", expected in [0, 90)");
      break;
    case MaterialKind::fluid:
      check(positive(m.bulk_modulus), field + ".bulk_modulus",
            number(m.bulk_modulus) + ", expected > 0 Pa");
      check(std::isfinite(m.tait_exponent) && m.tait_exponent > 1.0, field + ".tait_exponent",
            number(m.tait_exponent) + ", expected > 1");
      break;
    case MaterialKind::incompressible_fluid:
      break;
  }
}

}  // namespace

void check_particles(const Setup& setup, const ParticleBatch& batch, const char* what) {
  const auto n = static_cast<std::size_t>(batch.count());
  const auto dim = static_cast<std::size_t>(setup.dimension);
  const auto fail = [&](const std::string& field, const std::string& message) {
    throw Error(std::string(what) + "." + field + ": " + message);
  };
  const auto count_mismatch = [&](const char* field, std::size_t values, std::size_t expected) {
    fail(field, std::to_string(values) + " values for " + std::to_string(n) +
                    " particles (volumes), expected " + std::to_string(expected));
  };
  if (batch.positions.size() != n * dim) {
    count_mismatch("positions", batch.positions.size(), n * dim);
  }
  if (batch.velocities.size() != n * dim) {
    count_mismatch("velocities", batch.velocities.size(), n * dim);
  }
  if (!batch.volume_ratios.empty() && batch.volume_ratios.size() != n) {
    count_mismatch("volume_ratios", batch.volume_ratios.size(), n);
  }
  if (!batch.materials.empty() && batch.materials.size() != n) {
    count_mismatch("materials", batch.materials.size(), n);
  }
  // Strings are built only for the message: a valid batch costs no allocation.
  for (std::size_t p = 0; p < n; ++p) {
    for (std::size_t d = 0; d < dim; ++d) {
      const double x = batch.positions[p * dim + d];
      const double low = setup.origin[d];
      // The grid's end: a whole number of cells, which may fall an ulp short of the extent.
      const double high = setup.origin[d] + setup.cells(static_cast<int>(d)) * setup.cell_size();
      if (!(x >= low && x <= high)) {
        fail(indexed("positions", p), "coordinate " + std::to_string(d) + " is " + number(x) +
                                          ", outside the domain box [" + number(low) + ", " +
                                          number(high) + "]");
      }
      if (!std::isfinite(batch.velocities[p * dim + d])) {
        fail(indexed("velocities", p), "is not finite");
      }
    }
    if (!positive(batch.volumes[p])) {
      fail(indexed("volumes", p), number(batch.volumes[p]) + ", expected > 0");
    }
    if (!batch.volume_ratios.empty() && !positive(batch.volume_ratios[p])) {
      fail(indexed("volume_ratios", p), number(batch.volume_ratios[p]) + ", expected > 0");
    }
    if (!batch.materials.empty() &&
        (batch.materials[p] < 0 ||
         static_cast<std::size_t>(batch.materials[p]) >= setup.materials.size())) {
      fail(indexed("materials", p), std::to_string(batch.materials[p]) + ", expected 0 to " +
                                        std::to_string(setup.materials.size() - 1));
    }
  }
}

void validate_setup(const Setup& setup) {
  check(setup.dimension == 2 || setup.dimension == 3, "dimension",
        std::to_string(setup.dimension) + ", expected 2 or 3");
  const auto dim = static_cast<std::size_t>(setup.dimension);
  check(setup.resolution >= 4, "resolution",
        std::to_string(setup.resolution) + ", expected at least 4 cells along x");
  check(setup.boundary_cells >= 1 && setup.boundary_cells <= setup.resolution, "boundary_cells",
        std::to_string(setup.boundary_cells) + ", expected at least 1 (and fewer than the cells)");
  check(setup.basis == GridBasis::q1 || setup.basis == GridBasis::bspline2, "basis",
        "not a GridBasis value");
  double cells = 1.0;
  for (std::size_t d = 0; d < dim; ++d) {
    check(std::isfinite(setup.origin[d]), indexed("origin", d), "is not finite");
    check(positive(setup.extent[d]), indexed("extent", d),
          number(setup.extent[d]) + ", expected > 0 m");
    const double along = setup.extent[d] / setup.cell_size();
    check(std::abs(along - std::round(along)) <= 1e-9 * along && std::round(along) >= 4.0,
          indexed("extent", d),
          number(setup.extent[d]) + " m is " + number(along) + " cells of " +
              number(setup.cell_size()) +
              " m (extent[0] / resolution); expected a whole number of at least 4");
    cells *= std::round(along);
    check(std::isfinite(setup.gravity[d]), indexed("gravity", d), "is not finite");
    check(2 * std::int64_t{setup.boundary_cells} + 2 <= std::llround(along), "boundary_cells",
          std::to_string(setup.boundary_cells) + " layers along each face leave no cells inside " +
              "along axis " + std::to_string(d));
  }
  check(cells < static_cast<double>(std::numeric_limits<std::int32_t>::max()), "resolution",
        number(cells) + " cells in all, expected fewer than 2^31");
  for (std::size_t f = 0; f < 2 * dim; ++f) {
    const auto code = static_cast<int>(setup.boundaries[f]);
    check(code >= 0 && code <= 2, indexed("boundaries", f),
          std::to_string(code) + " is not a Boundary value");
  }

  check(!setup.materials.empty(), "materials", "is empty, expected at least one material");
  bool incompressible = false;
  for (std::size_t i = 0; i < setup.materials.size(); ++i) {
    const auto kind = static_cast<int>(setup.materials[i].kind);
    check(kind >= 0 && kind <= 3, indexed("materials", i) + ".kind",
          std::to_string(kind) + " is not a MaterialKind value");
    check_material(setup.materials[i], indexed("materials", i));
    incompressible =
        incompressible || setup.materials[i].kind == MaterialKind::incompressible_fluid;
  }
  if (incompressible) {
    check(setup.materials.size() == 1, "materials",
          "an incompressible fluid is the only material of its run; found " +
              std::to_string(setup.materials.size()) + " materials");
    for (std::size_t f = 0; f < 2 * dim; ++f) {
      check(setup.boundaries[f] != Boundary::open, indexed("boundaries", f),
            "open; the incompressible fluid's pressure projection needs every face closed");
    }
  }
  check(setup.dt >= 0.0 && std::isfinite(setup.dt), "dt",
        number(setup.dt) + ", expected a positive number of seconds (0: from cfl)");
  check(setup.dt > 0.0 || positive(setup.cfl), "cfl", number(setup.cfl) + ", expected > 0");
  check(setup.capacity >= 0 && setup.capacity < std::numeric_limits<std::int32_t>::max(),
        "capacity", std::to_string(setup.capacity) + ", expected 0 to 2^31 - 2");
  check(setup.capacity == 0 || setup.capacity >= setup.particles.count(), "capacity",
        std::to_string(setup.capacity) + " is below the " +
            std::to_string(setup.particles.count()) + " initial particles");
  check(setup.particle_capacity() < std::numeric_limits<std::int32_t>::max(), "particles",
        std::to_string(setup.particles.count()) + " particles, expected fewer than 2^31 - 1");
  check(setup.particle_capacity() > 0, "capacity",
        "0 with no initial particles; set a capacity to add particles later");
  check_particles(setup, setup.particles, "Setup.particles");
}

}  // namespace afem::apps::mpm
