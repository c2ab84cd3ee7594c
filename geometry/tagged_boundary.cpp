// TaggedBoundary and check_boundary_tags on the backend. Compiled by nvcc in the CUDA build.
#include "arenafem/geometry/tagged_boundary.hpp"

#include <thrust/copy.h>
#include <thrust/count.h>
#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>

#include <set>
#include <string>
#include <vector>

#include "arenafem/geometry/grid.hpp"
#include "arenafem/geometry/mesh.hpp"
#include "arenafem/memory/copy.hpp"
#include "arenafem/memory/error.hpp"
#include "arenafem/memory/replace_owned.hpp"
#include "arenafem/memory/thrust_allocator.hpp"

namespace afem::geometry {

template <class G>
void check_boundary_tags(const G& geometry, const SideTagSet& tags, memory::Arena& scratch,
                         std::string_view who) {
  const auto view = geometry.view();
  const std::int32_t boundary = geometry.boundary_side_count();
  auto policy = memory::arena_policy(scratch, "TaggedBoundary.thrust");
  for (int i = 0; i < tags.size(); ++i) {
    const std::int32_t tag = tags[i];
    const auto found = thrust::count_if(policy, thrust::counting_iterator<std::int32_t>(0),
                                        thrust::counting_iterator<std::int32_t>(boundary),
                                        [=] AFEM_HOST_DEVICE(std::int32_t b) {
                                          return view.side_tag(view.boundary_side(b)) == tag;
                                        });
    if (found > 0) {
      continue;
    }
    auto on_boundary = memory::borrow_temporary<std::int32_t>(
        scratch, static_cast<std::size_t>(boundary), "TaggedBoundary.tags");
    const auto out = on_boundary.view();
    thrust::for_each_n(policy, thrust::counting_iterator<std::int32_t>(0), boundary,
                       [=] AFEM_HOST_DEVICE(std::int32_t b) {
                         out[static_cast<std::size_t>(b)] = view.side_tag(view.boundary_side(b));
                       });
    std::vector<std::int32_t> host(static_cast<std::size_t>(boundary));
    memory::copy_to_host(std::span<std::int32_t>(host), memory::ArrayView<const std::int32_t>(out),
                         scratch.stream());
    scratch.stream().synchronize();
    const std::set<std::int32_t> present(host.begin(), host.end());
    std::string list;
    for (const std::int32_t t : present) {
      if (t != 0) {
        list += (list.empty() ? "" : ", ") + std::to_string(t);
      }
    }
    throw Error(std::string(who) + ": no boundary side has tag " + std::to_string(tag) +
                "; the boundary's tags are " + (list.empty() ? std::string("none") : list));
  }
}

namespace {

/// The boundary sides of `geometry` whose tag is in `tags`, in boundary-side order, in a buffer
/// from `pool`. (A free function: CUDA's extended lambdas cannot live in a constructor.)
template <class G>
memory::Temporary<std::int32_t> select_tagged_sides(const G& geometry, const SideTagSet& tags,
                                                    memory::Pool& pool, memory::Arena& scratch) {
  const auto view = geometry.view();
  const std::int32_t boundary = geometry.boundary_side_count();
  auto policy = memory::arena_policy(scratch, "TaggedBoundary.thrust");
  const auto selected = [=] AFEM_HOST_DEVICE(std::int32_t b) {
    return tags.contains(view.side_tag(view.boundary_side(b)));
  };
  const auto count = thrust::count_if(policy, thrust::counting_iterator<std::int32_t>(0),
                                      thrust::counting_iterator<std::int32_t>(boundary), selected);
  auto sides = memory::borrow_temporary<std::int32_t>(pool, static_cast<std::size_t>(count),
                                                      "TaggedBoundary.sides");
  const auto out = sides.view();
  thrust::copy_if(policy, thrust::counting_iterator<std::int32_t>(0),
                  thrust::counting_iterator<std::int32_t>(boundary), out.begin(), selected);
  thrust::for_each(policy, out.begin(), out.end(),
                   [=] AFEM_HOST_DEVICE(std::int32_t & b) { b = view.boundary_side(b); });
  return sides;
}

}  // namespace

template <class G>
TaggedBoundary<G>::TaggedBoundary(const G& geometry, const SideTagSet& tags, memory::Pool& pool,
                                  memory::Arena& scratch)
    : geometry_(&geometry), tags_(tags) {
  check_boundary_tags(geometry, tags, scratch, "TaggedBoundary");
  memory::replace_owned(sides_, select_tagged_sides(geometry, tags, pool, scratch));
}

#define AFEM_TAGGED_BOUNDARY(G)                                                     \
  template void check_boundary_tags<G>(const G&, const SideTagSet&, memory::Arena&, \
                                       std::string_view);                           \
  template class TaggedBoundary<G>;
AFEM_TAGGED_BOUNDARY(Trimesh)
AFEM_TAGGED_BOUNDARY(Quadmesh)
AFEM_TAGGED_BOUNDARY(Tetmesh)
AFEM_TAGGED_BOUNDARY(Hexmesh)
AFEM_TAGGED_BOUNDARY(Grid2D)
AFEM_TAGGED_BOUNDARY(Grid3D)
#undef AFEM_TAGGED_BOUNDARY

}  // namespace afem::geometry
