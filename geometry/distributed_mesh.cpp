#include "arenafem/geometry/distributed_mesh.hpp"

#include <metis.h>

#include <algorithm>
#include <array>
#include <climits>
#include <numeric>
#include <string>
#include <utility>

#include "arenafem/geometry/reference_cell.hpp"
#include "arenafem/memory/error.hpp"

namespace afem::geometry {

namespace {

using SideKey = std::array<std::int32_t, 4>;

/// The sorted vertices of a side, padded with INT32_MAX.
SideKey side_key(const std::int32_t* vertices, int count) {
  SideKey key;
  key.fill(INT32_MAX);
  std::copy_n(vertices, count, key.begin());
  // Insertion sort: four entries at most (std::sort's unrolled form trips GCC's array-bounds).
  for (std::size_t i = 1; i < key.size(); ++i) {
    for (std::size_t j = i; j > 0 && key[j - 1] > key[j]; --j) {
      std::swap(key[j - 1], key[j]);
    }
  }
  return key;
}

/// What every rank's part needs of the whole mesh, computed once on the root: which cells touch
/// each vertex, and the tag of each cell side on the boundary (-1 inside, 0 untagged).
struct WholeMeshTopology {
  std::vector<std::int32_t> vertex_cell_offsets;
  std::vector<std::int32_t> vertex_cells;
  std::vector<std::int32_t> side_boundary_tag;  ///< side_count per cell
  int side_count = 0;
  int side_vertex_count = 0;
  std::array<std::array<int, 4>, 6> side_vertex{};  ///< side_vertex[side][k]: cell-local vertex
};

template <CellType Type>
void read_reference_sides(WholeMeshTopology& topology) {
  using Cell = ReferenceCell<Type>;
  topology.side_count = Cell::side_count;
  topology.side_vertex_count = Cell::side_vertex_count;
  for (int s = 0; s < Cell::side_count; ++s) {
    for (int k = 0; k < Cell::side_vertex_count; ++k) {
      topology.side_vertex[static_cast<std::size_t>(s)][static_cast<std::size_t>(k)] =
          Cell::side_vertex(s, k);
    }
  }
}

WholeMeshTopology whole_mesh_topology(const MeshData& mesh) {
  WholeMeshTopology topology;
  switch (mesh.cell_type) {
    case CellType::triangle:
      read_reference_sides<CellType::triangle>(topology);
      break;
    case CellType::quadrilateral:
      read_reference_sides<CellType::quadrilateral>(topology);
      break;
    case CellType::tetrahedron:
      read_reference_sides<CellType::tetrahedron>(topology);
      break;
    case CellType::hexahedron:
      read_reference_sides<CellType::hexahedron>(topology);
      break;
  }
  const std::int32_t cells = mesh.cell_total();
  const std::int32_t vertices = mesh.vertex_total();
  const auto nv = static_cast<std::size_t>(vertex_count(mesh.cell_type));
  topology.vertex_cell_offsets.assign(static_cast<std::size_t>(vertices) + 1, 0);
  for (const std::int32_t v : mesh.cells) {
    ++topology.vertex_cell_offsets[static_cast<std::size_t>(v) + 1];
  }
  std::partial_sum(topology.vertex_cell_offsets.begin(), topology.vertex_cell_offsets.end(),
                   topology.vertex_cell_offsets.begin());
  topology.vertex_cells.resize(mesh.cells.size());
  std::vector<std::int32_t> fill(topology.vertex_cell_offsets.begin(),
                                 topology.vertex_cell_offsets.end() - 1);
  for (std::int32_t c = 0; c < cells; ++c) {
    for (std::size_t k = 0; k < nv; ++k) {
      const auto v = static_cast<std::size_t>(mesh.cells[static_cast<std::size_t>(c) * nv + k]);
      topology.vertex_cells[static_cast<std::size_t>(fill[v]++)] = c;
    }
  }

  // Sides: sorted by their vertices, a side met once is on the boundary.
  const auto ns = static_cast<std::size_t>(topology.side_count);
  std::vector<std::pair<SideKey, std::int64_t>> sides;
  sides.reserve(static_cast<std::size_t>(cells) * ns);
  for (std::int32_t c = 0; c < cells; ++c) {
    for (std::size_t s = 0; s < ns; ++s) {
      std::array<std::int32_t, 4> vertex{};
      for (int k = 0; k < topology.side_vertex_count; ++k) {
        vertex[static_cast<std::size_t>(k)] =
            mesh.cells[static_cast<std::size_t>(c) * nv +
                       static_cast<std::size_t>(
                           topology.side_vertex[s][static_cast<std::size_t>(k)])];
      }
      sides.emplace_back(side_key(vertex.data(), topology.side_vertex_count),
                         static_cast<std::int64_t>(c) * static_cast<std::int64_t>(ns) +
                             static_cast<std::int64_t>(s));
    }
  }
  std::sort(sides.begin(), sides.end());
  std::vector<std::pair<SideKey, std::int32_t>> tagged;
  tagged.reserve(static_cast<std::size_t>(mesh.side_total()));
  const auto nsv = static_cast<std::size_t>(topology.side_vertex_count);
  for (std::int32_t t = 0; t < mesh.side_total(); ++t) {
    tagged.emplace_back(side_key(&mesh.side_vertices[static_cast<std::size_t>(t) * nsv],
                                 topology.side_vertex_count),
                        mesh.side_tags[static_cast<std::size_t>(t)]);
  }
  std::sort(tagged.begin(), tagged.end());
  topology.side_boundary_tag.assign(sides.size(), -1);
  for (std::size_t i = 0; i < sides.size(); ++i) {
    const bool shared = (i > 0 && sides[i - 1].first == sides[i].first) ||
                        (i + 1 < sides.size() && sides[i + 1].first == sides[i].first);
    if (shared) {
      continue;
    }
    const auto found = std::lower_bound(
        tagged.begin(), tagged.end(), std::pair<SideKey, std::int32_t>(sides[i].first, INT32_MIN));
    const bool has_tag = found != tagged.end() && found->first == sides[i].first;
    topology.side_boundary_tag[static_cast<std::size_t>(sides[i].second)] =
        has_tag ? found->second : 0;
  }
  return topology;
}

LocalMeshData local_part(const MeshData& global, const WholeMeshTopology& topology,
                         const std::vector<std::int32_t>& partition, int rank,
                         std::vector<std::int32_t>& stamp) {
  const std::int32_t cells = global.cell_total();
  const auto nv = static_cast<std::size_t>(vertex_count(global.cell_type));
  const auto dim = static_cast<std::size_t>(dimension(global.cell_type));
  LocalMeshData local;
  local.global_cell_count = cells;
  local.global_vertex_count = global.vertex_total();
  std::vector<std::int32_t> owned;
  for (std::int32_t c = 0; c < cells; ++c) {
    if (partition[static_cast<std::size_t>(c)] == rank) {
      owned.push_back(c);
    }
  }
  // Ghosts: the cells around the owned cells' vertices. stamp[c] == rank + 1 marks a cell seen.
  std::vector<std::int32_t> ghosts;
  for (const std::int32_t c : owned) {
    stamp[static_cast<std::size_t>(c)] = rank + 1;
  }
  for (const std::int32_t c : owned) {
    for (std::size_t k = 0; k < nv; ++k) {
      const auto v = static_cast<std::size_t>(global.cells[static_cast<std::size_t>(c) * nv + k]);
      for (auto i = topology.vertex_cell_offsets[v]; i < topology.vertex_cell_offsets[v + 1]; ++i) {
        const std::int32_t neighbour = topology.vertex_cells[static_cast<std::size_t>(i)];
        if (stamp[static_cast<std::size_t>(neighbour)] != rank + 1) {
          stamp[static_cast<std::size_t>(neighbour)] = rank + 1;
          ghosts.push_back(neighbour);
        }
      }
    }
  }
  std::sort(ghosts.begin(), ghosts.end());
  std::vector<std::int32_t> local_cells = owned;
  local_cells.insert(local_cells.end(), ghosts.begin(), ghosts.end());
  local.owned_cells = static_cast<std::int32_t>(owned.size());

  std::vector<std::int32_t> vertices;
  for (const std::int32_t c : local_cells) {
    for (std::size_t k = 0; k < nv; ++k) {
      vertices.push_back(global.cells[static_cast<std::size_t>(c) * nv + k]);
    }
  }
  std::sort(vertices.begin(), vertices.end());
  vertices.erase(std::unique(vertices.begin(), vertices.end()), vertices.end());
  const auto local_vertex = [&](std::int32_t v) {
    return static_cast<std::int32_t>(std::lower_bound(vertices.begin(), vertices.end(), v) -
                                     vertices.begin());
  };

  MeshData& mesh = local.mesh;
  mesh.cell_type = global.cell_type;
  mesh.tag_names = global.tag_names;
  mesh.side_tag_names = global.side_tag_names;
  mesh.positions.reserve(vertices.size() * dim);
  for (const std::int32_t v : vertices) {
    local.global_vertices.push_back(v);
    for (std::size_t d = 0; d < dim; ++d) {
      mesh.positions.push_back(global.positions[static_cast<std::size_t>(v) * dim + d]);
    }
  }
  const auto ns = static_cast<std::size_t>(topology.side_count);
  for (std::size_t i = 0; i < local_cells.size(); ++i) {
    const auto c = static_cast<std::size_t>(local_cells[i]);
    local.global_cells.push_back(local_cells[i]);
    local.cell_owners.push_back(partition[c]);
    if (!global.cell_tags.empty()) {
      mesh.cell_tags.push_back(global.cell_tags[c]);
    }
    for (std::size_t k = 0; k < nv; ++k) {
      mesh.cells.push_back(local_vertex(global.cells[c * nv + k]));
    }
    if (i >= owned.size()) {
      continue;
    }
    for (std::size_t s = 0; s < ns; ++s) {
      const std::int32_t tag = topology.side_boundary_tag[c * ns + s];
      if (tag < 0) {
        continue;
      }
      for (int k = 0; k < topology.side_vertex_count; ++k) {
        const auto corner =
            static_cast<std::size_t>(topology.side_vertex[s][static_cast<std::size_t>(k)]);
        mesh.side_vertices.push_back(local_vertex(global.cells[c * nv + corner]));
      }
      mesh.side_tags.push_back(tag > 0 ? tag : untagged_boundary_tag);
    }
  }
  return local;
}

// Flat forms of a LocalMeshData for sending: integers, reals and global numbers.
struct Packed {
  std::vector<std::int32_t> ints;
  std::vector<double> reals;
  std::vector<std::int64_t> globals;
};

Packed pack(const LocalMeshData& local) {
  Packed packed;
  const MeshData& mesh = local.mesh;
  packed.ints = {static_cast<std::int32_t>(mesh.cell_type), local.owned_cells,
                 static_cast<std::int32_t>(mesh.cells.size()),
                 static_cast<std::int32_t>(mesh.cell_tags.size()),
                 static_cast<std::int32_t>(mesh.side_vertices.size())};
  packed.ints.insert(packed.ints.end(), mesh.cells.begin(), mesh.cells.end());
  packed.ints.insert(packed.ints.end(), mesh.cell_tags.begin(), mesh.cell_tags.end());
  packed.ints.insert(packed.ints.end(), mesh.side_vertices.begin(), mesh.side_vertices.end());
  packed.ints.insert(packed.ints.end(), mesh.side_tags.begin(), mesh.side_tags.end());
  packed.ints.insert(packed.ints.end(), local.cell_owners.begin(), local.cell_owners.end());
  packed.reals = mesh.positions;
  packed.globals = {local.global_cell_count, local.global_vertex_count,
                    static_cast<std::int64_t>(local.global_cells.size())};
  packed.globals.insert(packed.globals.end(), local.global_cells.begin(), local.global_cells.end());
  packed.globals.insert(packed.globals.end(), local.global_vertices.begin(),
                        local.global_vertices.end());
  return packed;
}

LocalMeshData unpack(Packed&& packed) {
  LocalMeshData local;
  MeshData& mesh = local.mesh;
  const std::vector<std::int32_t>& ints = packed.ints;
  mesh.cell_type = static_cast<CellType>(ints[0]);
  local.owned_cells = ints[1];
  const auto cell_entries = static_cast<std::size_t>(ints[2]);
  const auto tag_entries = static_cast<std::size_t>(ints[3]);
  const auto side_entries = static_cast<std::size_t>(ints[4]);
  auto at = ints.begin() + 5;
  const auto take = [&at](std::vector<std::int32_t>& into, std::size_t count) {
    into.assign(at, at + static_cast<std::ptrdiff_t>(count));
    at += static_cast<std::ptrdiff_t>(count);
  };
  take(mesh.cells, cell_entries);
  take(mesh.cell_tags, tag_entries);
  take(mesh.side_vertices, side_entries);
  take(mesh.side_tags, side_entries / static_cast<std::size_t>(side_vertex_count(mesh.cell_type)));
  take(local.cell_owners, cell_entries / static_cast<std::size_t>(vertex_count(mesh.cell_type)));
  mesh.positions = std::move(packed.reals);
  local.global_cell_count = packed.globals[0];
  local.global_vertex_count = packed.globals[1];
  const auto cell_count = static_cast<std::ptrdiff_t>(packed.globals[2]);
  local.global_cells.assign(packed.globals.begin() + 3, packed.globals.begin() + 3 + cell_count);
  local.global_vertices.assign(packed.globals.begin() + 3 + cell_count, packed.globals.end());
  return local;
}

/// Names as "tag\tname\n" lines, and back.
std::vector<char> pack_names(const std::vector<std::pair<std::int32_t, std::string>>& names) {
  std::string text;
  for (const auto& [tag, name] : names) {
    text += std::to_string(tag) + '\t' + name + '\n';
  }
  return {text.begin(), text.end()};
}

std::vector<std::pair<std::int32_t, std::string>> unpack_names(const std::vector<char>& text) {
  std::vector<std::pair<std::int32_t, std::string>> names;
  std::size_t begin = 0;
  while (begin < text.size()) {
    const auto tab = static_cast<std::size_t>(
        std::find(text.begin() + static_cast<std::ptrdiff_t>(begin), text.end(), '\t') -
        text.begin());
    const auto end = static_cast<std::size_t>(
        std::find(text.begin() + static_cast<std::ptrdiff_t>(tab), text.end(), '\n') -
        text.begin());
    names.emplace_back(std::stoi(std::string(text.begin() + static_cast<std::ptrdiff_t>(begin),
                                             text.begin() + static_cast<std::ptrdiff_t>(tab))),
                       std::string(text.begin() + static_cast<std::ptrdiff_t>(tab) + 1,
                                   text.begin() + static_cast<std::ptrdiff_t>(end)));
    begin = end + 1;
  }
  return names;
}

}  // namespace

std::vector<std::int32_t> partition_cells(const MeshData& mesh, int parts) {
  check_consistent(mesh, "partition_cells");
  const std::int32_t cells = mesh.cell_total();
  AFEM_EXPECTS(parts >= 1 && parts <= cells, "partition_cells: " + std::to_string(parts) +
                                                 " parts for a mesh of " + std::to_string(cells) +
                                                 " cells; expected 1 to the cell count");
  if (parts == 1) {
    return std::vector<std::int32_t>(static_cast<std::size_t>(cells), 0);
  }
  const auto nv = static_cast<idx_t>(vertex_count(mesh.cell_type));
  idx_t element_count = cells;
  idx_t node_count = mesh.vertex_total();
  std::vector<idx_t> offsets(static_cast<std::size_t>(cells) + 1);
  for (std::size_t c = 0; c < offsets.size(); ++c) {
    offsets[c] = static_cast<idx_t>(c) * nv;
  }
  std::vector<idx_t> vertices(mesh.cells.begin(), mesh.cells.end());
  idx_t common = side_vertex_count(mesh.cell_type);
  idx_t part_count = parts;
  std::array<idx_t, METIS_NOPTIONS> options{};
  METIS_SetDefaultOptions(options.data());
  options[METIS_OPTION_NUMBERING] = 0;
  options[METIS_OPTION_SEED] = 1;
  idx_t cut = 0;
  std::vector<idx_t> cell_part(static_cast<std::size_t>(cells));
  std::vector<idx_t> vertex_part(static_cast<std::size_t>(node_count));
  const int status = METIS_PartMeshDual(
      &element_count, &node_count, offsets.data(), vertices.data(), nullptr, nullptr, &common,
      &part_count, nullptr, options.data(), &cut, cell_part.data(), vertex_part.data());
  AFEM_EXPECTS(status == METIS_OK, "partition_cells: METIS_PartMeshDual failed (status " +
                                       std::to_string(status) + ") for " + std::to_string(cells) +
                                       " cells in " + std::to_string(parts) + " parts");
  std::vector<std::int32_t> partition(cell_part.begin(), cell_part.end());
  std::vector<std::int32_t> sizes(static_cast<std::size_t>(parts), 0);
  for (const std::int32_t p : partition) {
    ++sizes[static_cast<std::size_t>(p)];
  }
  for (int p = 0; p < parts; ++p) {
    AFEM_EXPECTS(sizes[static_cast<std::size_t>(p)] > 0,
                 "partition_cells: METIS left part " + std::to_string(p) + " of " +
                     std::to_string(parts) + " empty (" + std::to_string(cells) +
                     " cells); use fewer ranks for this mesh");
  }
  return partition;
}

void broadcast_tag_names(const memory::Communicator& comm,
                         std::vector<std::pair<std::int32_t, std::string>>& names, int root) {
  std::vector<char> text = pack_names(names);
  comm.broadcast(text, root);
  names = unpack_names(text);
}

LocalMeshData local_mesh(const MeshData& global, const std::vector<std::int32_t>& partition,
                         int rank) {
  check_consistent(global, "local_mesh");
  AFEM_EXPECTS(partition.size() == static_cast<std::size_t>(global.cell_total()),
               "local_mesh: " + std::to_string(partition.size()) + " parts for " +
                   std::to_string(global.cell_total()) + " cells");
  const WholeMeshTopology topology = whole_mesh_topology(global);
  std::vector<std::int32_t> stamp(partition.size(), 0);
  return local_part(global, topology, partition, rank, stamp);
}

LocalMeshData distribute_mesh(const memory::Communicator& comm, const MeshData& global, int root) {
  std::vector<std::vector<std::int32_t>> ints(static_cast<std::size_t>(comm.size()));
  std::vector<std::vector<double>> reals(ints.size());
  std::vector<std::vector<std::int64_t>> globals(ints.size());
  comm.collective([&] {
    if (comm.rank() != root) {
      return;
    }
    const std::vector<std::int32_t> partition = partition_cells(global, comm.size());
    const WholeMeshTopology topology = whole_mesh_topology(global);
    std::vector<std::int32_t> stamp(partition.size(), 0);
    for (int r = 0; r < comm.size(); ++r) {
      Packed packed = pack(local_part(global, topology, partition, r, stamp));
      const auto at = static_cast<std::size_t>(r);
      ints[at] = std::move(packed.ints);
      reals[at] = std::move(packed.reals);
      globals[at] = std::move(packed.globals);
    }
  });
  Packed mine;
  mine.ints = comm.scatter(ints, root);
  mine.reals = comm.scatter(reals, root);
  mine.globals = comm.scatter(globals, root);
  LocalMeshData local = unpack(std::move(mine));
  if (comm.rank() == root) {
    local.mesh.tag_names = global.tag_names;
    local.mesh.side_tag_names = global.side_tag_names;
  }
  broadcast_tag_names(comm, local.mesh.tag_names, root);
  broadcast_tag_names(comm, local.mesh.side_tag_names, root);
  return local;
}

}  // namespace afem::geometry
