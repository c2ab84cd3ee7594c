#include <gtest/gtest.h>

#include "arenafem/memory/ledger.hpp"

namespace afem::memory {
namespace {

TEST(Ledger, CountsPerLabelAndKeepsPeaksAcrossClear) {
  Ledger ledger;
  LedgerEntry& a = ledger.entry("Mesh.vertices");
  EXPECT_EQ(&ledger.entry("Mesh.vertices"), &a) << "one entry per label";
  EXPECT_EQ(ledger.find("unknown"), nullptr);
  Ledger::add(a, 1000);
  Ledger::add(a, 500);
  Ledger::remove(a, 1000);
  Ledger::add(ledger.entry("Mesh.cells"), 4096);
  LedgerSnapshot snapshot = ledger.snapshot("pool");
  ASSERT_EQ(snapshot.entries.size(), 2U);
  EXPECT_EQ(snapshot.entries[0].label, "Mesh.cells");
  EXPECT_EQ(snapshot.live_bytes(), 4596U);
  EXPECT_EQ(snapshot.find("Mesh.vertices")->peak_bytes, 1500U);
  EXPECT_EQ(snapshot.find("Mesh.vertices")->live_count, 1U);
  EXPECT_EQ(snapshot.find("Mesh.vertices")->borrows, 2U);
  ledger.clear_live();
  snapshot = ledger.snapshot("pool");
  EXPECT_EQ(snapshot.live_bytes(), 0U);
  EXPECT_EQ(snapshot.find("Mesh.vertices")->peak_bytes, 1500U);
}

TEST(Ledger, TableAndJsonNameEveryLabel) {
  Ledger ledger;
  Ledger::add(ledger.entry("PicQuadrature.cell_particle_offsets"), 2048);
  Ledger::add(ledger.entry("odd \"label\"\n"), 256);
  const LedgerSnapshot snapshot = ledger.snapshot("step arena");
  const std::string table = snapshot.table();
  EXPECT_NE(table.find("step arena"), std::string::npos) << table;
  EXPECT_NE(table.find("PicQuadrature.cell_particle_offsets"), std::string::npos) << table;
  EXPECT_NE(table.find("2.00 KiB"), std::string::npos) << table;
  EXPECT_NE(table.find("2.25 KiB"), std::string::npos) << "the total:\n" << table;
  EXPECT_EQ(snapshot.json(),
            "{\"owner\":\"step arena\",\"live_bytes\":2304,\"entries\":["
            "{\"label\":\"PicQuadrature.cell_particle_offsets\",\"live_bytes\":2048,"
            "\"live_count\":1,\"peak_bytes\":2048,\"borrows\":1},"
            "{\"label\":\"odd \\\"label\\\"\\n\",\"live_bytes\":256,\"live_count\":1,"
            "\"peak_bytes\":256,\"borrows\":1}]}");
}

TEST(FormatBytes, PicksTheUnit) {
  EXPECT_EQ(format_bytes(0), "0 B");
  EXPECT_EQ(format_bytes(1023), "1023 B");
  EXPECT_EQ(format_bytes(1536), "1.50 KiB");
  EXPECT_EQ(format_bytes(std::size_t{3} << 30), "3.00 GiB");
}

}  // namespace
}  // namespace afem::memory
