// The checkpoint file: a little-endian byte stream with a length and an FNV-1a checksum.
#include "arenafem/apps/mpm/checkpoint.hpp"

#include <array>
#include <bit>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <span>
#include <type_traits>
#include <vector>

#include "arenafem/memory/error.hpp"

namespace afem::apps::mpm {
namespace {

static_assert(std::endian::native == std::endian::little,
              "the checkpoint writer stores numbers in the machine's order: little-endian only");

constexpr std::array<char, 8> magic = {'A', 'F', 'E', 'M', 'C', 'K', 'P', 'T'};
constexpr std::size_t header_bytes = 24;

std::uint64_t fnv1a(std::span<const char> bytes) {
  std::uint64_t hash = 14695981039346656037ULL;
  for (const char c : bytes) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 1099511628211ULL;
  }
  return hash;
}

/// Appends numbers and arrays to a byte buffer.
class Writer {
public:
  template <class T>
  void value(T v) {
    static_assert(std::is_trivially_copyable_v<T>);
    const auto* bytes = reinterpret_cast<const char*>(&v);
    bytes_.insert(bytes_.end(), bytes, bytes + sizeof(T));
  }
  template <class T>
  void array(const std::vector<T>& values) {
    if (values.empty()) {
      return;
    }
    const auto* bytes = reinterpret_cast<const char*>(values.data());
    bytes_.insert(bytes_.end(), bytes, bytes + values.size() * sizeof(T));
  }
  std::vector<char>& bytes() { return bytes_; }

private:
  std::vector<char> bytes_;
};

/// Reads numbers and arrays from a byte buffer; running past its end throws, naming the file.
class Reader {
public:
  Reader(std::span<const char> bytes, const std::string& path) : bytes_(bytes), path_(path) {}
  template <class T>
  T value(const char* what) {
    T v{};
    take(&v, sizeof(T), what);
    return v;
  }
  template <class T>
  void array(std::vector<T>& values, std::size_t count, const char* what) {
    if (count > (bytes_.size() - offset_) / sizeof(T)) {
      truncated(what);
    }
    values.resize(count);
    take(values.data(), count * sizeof(T), what);
  }
  [[nodiscard]] std::size_t left() const { return bytes_.size() - offset_; }

private:
  void take(void* destination, std::size_t bytes, const char* what) {
    if (bytes > bytes_.size() - offset_) {
      truncated(what);
    }
    if (bytes == 0) {
      return;  // an empty array's data() may be null
    }
    std::memcpy(destination, bytes_.data() + offset_, bytes);
    offset_ += bytes;
  }
  [[noreturn]] void truncated(const char* what) const {
    throw Error("checkpoint " + path_ + ": the payload ends inside " + what +
                " (a file of another layout)");
  }
  std::span<const char> bytes_;
  std::size_t offset_ = 0;
  const std::string& path_;
};

void write_setup(Writer& out, const Setup& setup) {
  out.value<std::int32_t>(setup.basis == GridBasis::bspline2 ? 1 : 0);
  for (const double x : setup.origin) {
    out.value(x);
  }
  for (const double x : setup.extent) {
    out.value(x);
  }
  out.value<std::int32_t>(setup.resolution);
  for (const double g : setup.gravity) {
    out.value(g);
  }
  for (const Boundary b : setup.boundaries) {
    out.value(static_cast<std::uint8_t>(b));
  }
  out.value<std::int32_t>(setup.boundary_cells);
  out.value(setup.dt);
  out.value(setup.cfl);
  out.value<std::uint8_t>(setup.pressure_preconditioner == PressurePreconditioner::multigrid ? 1
                                                                                             : 0);
  out.value<std::int64_t>(setup.capacity);
  out.value<std::uint8_t>(setup.external_forces ? 1 : 0);
  out.value(static_cast<std::uint32_t>(setup.materials.size()));
  for (const Material& m : setup.materials) {
    out.value(static_cast<std::int32_t>(m.kind));
    out.value(m.density);
    out.value(m.youngs_modulus);
    out.value(m.poisson_ratio);
    out.value(m.friction_angle_degrees);
    out.value(m.bulk_modulus);
    out.value(m.tait_exponent);
  }
}

Setup read_setup(Reader& in, int dimension, const std::string& path) {
  Setup setup;
  setup.dimension = dimension;
  const auto basis = in.value<std::int32_t>("the basis");
  if (basis != 0 && basis != 1) {
    throw Error("checkpoint " + path + ": basis " + std::to_string(basis) + ", expected 0 or 1");
  }
  setup.basis = basis == 1 ? GridBasis::bspline2 : GridBasis::q1;
  for (double& x : setup.origin) {
    x = in.value<double>("the origin");
  }
  for (double& x : setup.extent) {
    x = in.value<double>("the extent");
  }
  setup.resolution = in.value<std::int32_t>("the resolution");
  for (double& g : setup.gravity) {
    g = in.value<double>("the gravity");
  }
  for (Boundary& b : setup.boundaries) {
    const auto code = in.value<std::uint8_t>("the boundaries");
    if (code > 2) {
      throw Error("checkpoint " + path + ": boundary code " + std::to_string(code) +
                  ", expected 0 to 2");
    }
    b = static_cast<Boundary>(code);
  }
  setup.boundary_cells = in.value<std::int32_t>("boundary_cells");
  setup.dt = in.value<double>("dt");
  setup.cfl = in.value<double>("cfl");
  const auto preconditioner = in.value<std::uint8_t>("the pressure preconditioner");
  if (preconditioner > 1) {
    throw Error("checkpoint " + path + ": pressure preconditioner " +
                std::to_string(preconditioner) + ", expected 0 or 1");
  }
  setup.pressure_preconditioner =
      preconditioner == 1 ? PressurePreconditioner::multigrid : PressurePreconditioner::jacobi;
  setup.capacity = in.value<std::int64_t>("the capacity");
  setup.external_forces = in.value<std::uint8_t>("external_forces") != 0;
  const auto materials = in.value<std::uint32_t>("the material count");
  if (materials == 0 || materials > in.left() / 52) {
    throw Error("checkpoint " + path + ": " + std::to_string(materials) +
                " materials, more than the file holds or none");
  }
  setup.materials.assign(materials, Material{});
  for (Material& m : setup.materials) {
    const auto kind = in.value<std::int32_t>("a material");
    if (kind < 0 || kind > 3) {
      throw Error("checkpoint " + path + ": material kind " + std::to_string(kind) +
                  ", expected 0 to 3");
    }
    m.kind = static_cast<MaterialKind>(kind);
    m.density = in.value<double>("a material");
    m.youngs_modulus = in.value<double>("a material");
    m.poisson_ratio = in.value<double>("a material");
    m.friction_angle_degrees = in.value<double>("a material");
    m.bulk_modulus = in.value<double>("a material");
    m.tait_exponent = in.value<double>("a material");
  }
  return setup;
}

}  // namespace

void write_checkpoint(const std::string& path, const Checkpoint& checkpoint) {
  const Setup& setup = checkpoint.setup;
  const auto n = static_cast<std::size_t>(checkpoint.particle_count);
  const auto d = static_cast<std::size_t>(setup.dimension);
  AFEM_EXPECTS(checkpoint.positions.size() == n * d && checkpoint.velocities.size() == n * d &&
                   checkpoint.affine.size() == n * d * d &&
                   checkpoint.deformation.size() == n * d * d && checkpoint.volumes.size() == n &&
                   checkpoint.materials.size() == n &&
                   checkpoint.forces.size() == (setup.external_forces ? n * d : 0),
               "write_checkpoint " + path + ": the arrays disagree with " + std::to_string(n) +
                   " particles in " + std::to_string(d) + "D");
  Writer out;
  for (const char c : magic) {
    out.value(c);
  }
  out.value(checkpoint_version);
  out.value(static_cast<std::uint32_t>(setup.dimension));
  out.value<std::uint64_t>(0);  // the payload's size, filled in below
  write_setup(out, setup);
  out.value<std::int64_t>(checkpoint.steps);
  out.value<std::int64_t>(checkpoint.particles_left);
  out.value<std::int32_t>(checkpoint.particle_count);
  out.array(checkpoint.positions);
  out.array(checkpoint.velocities);
  out.array(checkpoint.affine);
  out.array(checkpoint.deformation);
  out.array(checkpoint.volumes);
  out.array(checkpoint.materials);
  out.array(checkpoint.forces);
  out.value(static_cast<std::uint64_t>(checkpoint.pressure.size()));
  out.array(checkpoint.pressure);
  std::vector<char>& bytes = out.bytes();
  const std::uint64_t payload = bytes.size() - header_bytes;
  std::memcpy(bytes.data() + 16, &payload, sizeof(payload));
  out.value(fnv1a(bytes));

  const std::string partial = path + ".partial";
  {
    std::ofstream file(partial, std::ios::binary | std::ios::trunc);
    file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    file.close();  // flushes: a full disk shows here
    if (!file) {
      std::remove(partial.c_str());
      throw Error("write_checkpoint: cannot write " + partial);
    }
  }
  if (std::rename(partial.c_str(), path.c_str()) != 0) {
    std::remove(partial.c_str());
    throw Error("write_checkpoint: cannot rename " + partial + " to " + path);
  }
}

Checkpoint read_checkpoint(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    throw Error("checkpoint " + path + ": cannot open the file");
  }
  const std::vector<char> bytes((std::istreambuf_iterator<char>(file)),
                                std::istreambuf_iterator<char>());
  if (bytes.size() < 8 || std::memcmp(bytes.data(), magic.data(), magic.size()) != 0) {
    throw Error("checkpoint " + path + ": not an arenafem MPM checkpoint (no AFEMCKPT magic)");
  }
  if (bytes.size() < header_bytes + 8) {
    throw Error("checkpoint " + path + ": truncated: " + std::to_string(bytes.size()) +
                " bytes, shorter than the header");
  }
  std::uint32_t version = 0;
  std::uint32_t dimension = 0;
  std::uint64_t payload = 0;
  std::memcpy(&version, bytes.data() + 8, 4);
  std::memcpy(&dimension, bytes.data() + 12, 4);
  std::memcpy(&payload, bytes.data() + 16, 8);
  if (version != checkpoint_version) {
    throw Error("checkpoint " + path + ": format version " + std::to_string(version) +
                ", this build reads version " + std::to_string(checkpoint_version));
  }
  if (dimension != 2 && dimension != 3) {
    throw Error("checkpoint " + path + ": dimension " + std::to_string(dimension) +
                ", expected 2 or 3");
  }
  if (payload != bytes.size() - header_bytes - 8) {
    throw Error("checkpoint " + path + ": truncated or extended: the header gives " +
                std::to_string(payload + header_bytes + 8) + " bytes, the file has " +
                std::to_string(bytes.size()));
  }
  std::uint64_t stored = 0;
  std::memcpy(&stored, bytes.data() + bytes.size() - 8, 8);
  if (stored != fnv1a(std::span<const char>(bytes.data(), bytes.size() - 8))) {
    throw Error("checkpoint " + path + ": checksum mismatch: the file is corrupted");
  }

  Reader in(std::span<const char>(bytes.data() + header_bytes, payload), path);
  Checkpoint checkpoint;
  checkpoint.setup = read_setup(in, static_cast<int>(dimension), path);
  checkpoint.steps = in.value<std::int64_t>("the step count");
  checkpoint.particles_left = in.value<std::int64_t>("the particles left");
  checkpoint.particle_count = in.value<std::int32_t>("the particle count");
  if (checkpoint.particle_count < 0) {
    throw Error("checkpoint " + path + ": particle count " +
                std::to_string(checkpoint.particle_count));
  }
  const auto n = static_cast<std::size_t>(checkpoint.particle_count);
  const std::size_t d = dimension;
  in.array(checkpoint.positions, n * d, "the positions");
  in.array(checkpoint.velocities, n * d, "the velocities");
  in.array(checkpoint.affine, n * d * d, "the affine velocities");
  in.array(checkpoint.deformation, n * d * d, "the deformation gradients");
  in.array(checkpoint.volumes, n, "the volumes");
  in.array(checkpoint.materials, n, "the material indices");
  in.array(checkpoint.forces, checkpoint.setup.external_forces ? n * d : 0, "the forces");
  const auto pressure = in.value<std::uint64_t>("the pressure count");
  in.array(checkpoint.pressure, static_cast<std::size_t>(pressure), "the pressure");
  if (in.left() != 0) {
    throw Error("checkpoint " + path + ": " + std::to_string(in.left()) +
                " bytes follow the last field");
  }
  return checkpoint;
}

}  // namespace afem::apps::mpm
