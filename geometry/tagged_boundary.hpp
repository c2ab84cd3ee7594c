#pragma once

/// @file
/// TaggedBoundary: the boundary sides of a geometry whose tags are in a SideTagSet, for boundary
/// conditions by name (BoundarySides over them, boundary_dofs by tag).

#include <cstdint>
#include <string_view>

#include "arenafem/geometry/side_tag_set.hpp"
#include "arenafem/memory/arena.hpp"
#include "arenafem/memory/array_view.hpp"
#include "arenafem/memory/pool.hpp"
#include "arenafem/memory/temporary.hpp"

namespace afem::geometry {

/// Throws afem::Error, prefixed with `who`, unless each tag of `tags` is the tag of at least one
/// boundary side of `geometry` (a misspelt tag would otherwise impose nothing); the message names
/// the first missing tag and lists the tags the boundary has. Scratch comes from `scratch`.
template <class G>
void check_boundary_tags(const G& geometry, const SideTagSet& tags, memory::Arena& scratch,
                         std::string_view who);

/// The boundary sides of `geometry` whose tag is in `tags`, in boundary-side order, as an index
/// buffer it owns ("TaggedBoundary.sides" in the pool's ledger), built on the backend at
/// construction and released with the object. It refers to the geometry, which must outlive it;
/// a mesh whose topology is rebuilt needs a new TaggedBoundary. Construction throws afem::Error
/// (see check_boundary_tags) when a tag has no boundary side. Compiled for the library's
/// geometries (Grid2D, Grid3D, Trimesh, Quadmesh, Tetmesh, Hexmesh).
template <class G>
class TaggedBoundary {
public:
  TaggedBoundary(const G& geometry, const SideTagSet& tags, memory::Pool& pool,
                 memory::Arena& scratch);

  [[nodiscard]] const G& geometry() const { return *geometry_; }
  [[nodiscard]] const SideTagSet& tags() const { return tags_; }
  [[nodiscard]] std::int32_t side_count() const { return static_cast<std::int32_t>(sides_.size()); }
  /// The selected side indices, in the pool's memory.
  [[nodiscard]] memory::ArrayView<const std::int32_t> sides() const { return sides_.view(); }

private:
  const G* geometry_;
  SideTagSet tags_;
  memory::Temporary<std::int32_t> sides_;
};

}  // namespace afem::geometry
