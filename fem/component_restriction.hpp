#pragma once

/// @file
/// ComponentRestriction: a scalar space's restriction read as the restriction of the same space
/// with C components, so that vector forms assemble on it without a restriction of their own.

#include <cstdint>

#include "arenafem/fem/space_restriction.hpp"

namespace afem::fem {

/// The restriction `scalar` of a one-component space, read as the restriction of the same space
/// with C components: same element, domain, nodes and numbering, C values per node. Owns nothing:
/// it reads `scalar`'s buffers, which must outlive it, and follows its rebuilds (same views, same
/// version), so a second space with the same nodes costs no second rebuild.
template <class Restriction, int C>
class ComponentRestriction {
  static_assert(Restriction::components == 1,
                "ComponentRestriction reads the restriction of a one-component space");
  static_assert(C >= 1, "ComponentRestriction needs at least one component");

public:
  using DomainType = typename Restriction::DomainType;
  using Element = typename Restriction::Element;
  static constexpr int components = C;

  explicit ComponentRestriction(const Restriction& scalar) : scalar_(&scalar) {}
  /// A temporary restriction would be gone before this is used.
  explicit ComponentRestriction(const Restriction&& scalar) = delete;

  /// The scalar restriction's domain.
  [[nodiscard]] const DomainType& domain() const { return scalar_->domain(); }
  /// Rows (test) or columns (trial) of an assembled matrix, in blocks of C.
  [[nodiscard]] std::int32_t node_count() const { return scalar_->node_count(); }
  /// Elements of the domain at the scalar restriction's last rebuild.
  [[nodiscard]] std::int32_t element_count() const { return scalar_->element_count(); }
  /// The scalar restriction's version: a matrix plan built on one holds for the other.
  [[nodiscard]] std::uint64_t version() const { return scalar_->version(); }
  /// The scalar restriction's node numbering, which is this one's.
  [[nodiscard]] RestrictionView view() const { return scalar_->view(); }

private:
  const Restriction* scalar_;
};

/// `scalar` read with C components per node (see ComponentRestriction).
template <int C, class Restriction>
ComponentRestriction<Restriction, C> with_components(const Restriction& scalar) {
  return ComponentRestriction<Restriction, C>(scalar);
}
template <int C, class Restriction>
void with_components(const Restriction&& scalar) = delete;

}  // namespace afem::fem
