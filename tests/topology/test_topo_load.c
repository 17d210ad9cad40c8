/* test_topo_load: the model built from real machines' hwloc XML files — NUMA domains, cores,
 * L3 groups, disallowed PUs, and GPU / NIC locality as lstopo shows it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "cpulist.h"
#include "fixtures.h"

/* One device as lstopo shows it: name (osdev), PCI bus id, NUMA list. */
typedef struct {
    const char *name;
    const char *pci;
    const char *numa;
} expected_device_t;

typedef struct {
    const char *file;
    int nnuma, ncores;
    const expected_device_t *gpus;
    int ngpus;
    const expected_device_t *nics;
    int nnics;
} expected_machine_t;

#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

static const expected_device_t juwels_gpus[] = {
    {"cuda0", "0000:03:00.0", "3"},
    {"cuda1", "0000:44:00.0", "1"},
    {"cuda2", "0000:84:00.0", "7"},
    {"cuda3", "0000:c4:00.0", "5"},
};
static const expected_device_t juwels_nics[] = {
    {"mlx5_0", "0000:01:00.0", "3"},
    {"mlx5_1", "0000:45:00.0", "1"},
    {"mlx5_2", "0000:85:00.0", "7"},
    {"mlx5_3", "0000:c5:00.0", "5"},
};
/* The AMD GPUs are seen through OpenCL only; the ASPEED BMC VGA on NUMA 0 is not a GPU. */
static const expected_device_t corona_gpus[] = {
    {"opencl0d0", "0000:13:00.0", "1"},
    {"opencl0d1", "0000:23:00.0", "2"},
    {"opencl0d2", "0000:53:00.0", "5"},
    {"opencl0d3", "0000:73:00.0", "7"},
};
static const expected_device_t corona_nics[] = {
    {"enp3s0f0", "0000:03:00.0", "0"},
    {"enp3s0f1", "0000:03:00.1", "0"},
    {"mlx5_0", "0000:33:00.0", "3"},
};
/* RSMI-only GPUs whose first non-I/O ancestor is an L3, finer than the NUMA domain. */
static const expected_device_t tioga_gpus[] = {
    {"rsmi0", "0000:c1:00.0", "3"}, {"rsmi1", "0000:c6:00.0", "3"}, {"rsmi2", "0000:c9:00.0", "1"},
    {"rsmi3", "0000:ce:00.0", "1"}, {"rsmi4", "0000:d1:00.0", "0"}, {"rsmi5", "0000:d6:00.0", "0"},
    {"rsmi6", "0000:d9:00.0", "2"}, {"rsmi7", "0000:de:00.0", "2"},
};
static const expected_device_t tioga_nics[] = {
    {"ens2", "0000:94:00.0", "0"}, {"hsi0", "0000:c5:00.0", "3"}, {"hsi1", "0000:cd:00.0", "1"},
    {"hsi2", "0000:d5:00.0", "0"}, {"hsi3", "0000:dd:00.0", "2"},
};
/* Non-contiguous NUMA OS indexes 0 and 8. */
static const expected_device_t lassen_gpus[] = {
    {"cuda0", "0004:04:00.0", "0"},
    {"cuda1", "0004:05:00.0", "0"},
    {"cuda2", "0035:03:00.0", "8"},
    {"cuda3", "0035:04:00.0", "8"},
};
static const expected_device_t lassen_nics[] = {
    {"mlx5_0", "0003:01:00.0", "0"},     {"mlx5_1", "0003:01:00.1", "0"}, {"enP5p1s0f0", "0005:01:00.0", "0"},
    {"enP5p1s0f1", "0005:01:00.1", "0"}, {"mlx5_2", "0033:01:00.0", "8"}, {"mlx5_3", "0033:01:00.1", "8"},
};
/* RSMI preferred over OpenCL names; index follows the PCI bus id, not the osdev number. */
static const expected_device_t corona_p2_gpus[] = {
    {"rsmi2", "0000:03:00.0", "0"}, {"rsmi3", "0000:27:00.0", "0"}, {"rsmi1", "0000:43:00.0", "0"},
    {"rsmi0", "0000:63:00.0", "0"}, {"rsmi6", "0000:83:00.0", "1"}, {"rsmi7", "0000:a3:00.0", "1"},
    {"rsmi5", "0000:c3:00.0", "1"}, {"rsmi4", "0000:e3:00.0", "1"},
};
static const expected_device_t corona_p2_nics[] = {
    {"mlx5_0", "0000:c4:00.0", "1"},
    {"eno1", "0000:e7:00.0", "1"},
    {"eno2", "0000:e7:00.1", "1"},
};
static const expected_device_t g4dn_gpus[] = {
    {"cuda0", "0000:18:00.0", "0"}, {"cuda1", "0000:19:00.0", "0"}, {"cuda2", "0000:35:00.0", "0"},
    {"cuda3", "0000:36:00.0", "0"}, {"cuda4", "0000:e7:00.0", "1"}, {"cuda5", "0000:e8:00.0", "1"},
    {"cuda6", "0000:f4:00.0", "1"}, {"cuda7", "0000:f5:00.0", "1"},
};
static const expected_device_t g4dn_nics[] = {
    {"rdmap197s0", "0000:c5:00.0", "1"},
    {"eth0", "0000:c6:00.0", "1"},
};
static const expected_device_t pascal_gpus[] = {{"cuda0", "0000:04:00.0", "0"}, {"cuda1", "0000:07:00.0", "0"}};
static const expected_device_t pascal_nics[] = {
    {"mlx5_0", "0000:08:00.0", "0"},
    {"enp12s0f0", "0000:0c:00.0", "0"},
    {"enp12s0f1", "0000:0c:00.1", "0"},
};
static const expected_device_t power8_gpus[] = {
    {"cuda0", "0002:01:00.0", "0"},
    {"cuda1", "0003:01:00.0", "0"},
    {"cuda2", "000a:01:00.0", "1"},
    {"cuda3", "000b:01:00.0", "1"},
};
/* NVIDIA 3D controllers with no runtime osdev are GPUs; the ATI ES1000 VGA is not. */
static const expected_device_t em64t_gpus[] = {
    {"", "0000:06:00.0", "0"},
    {"", "0000:11:00.0", "1"},
    {"", "0000:14:00.0", "1"},
};
static const expected_device_t em64t_nics[] = {
    {"eth0", "0000:04:00.0", "0"},
    {"eth1", "0000:04:00.1", "0"},
    {"mlx4_0", "0000:05:00.0", "0"},
};
/* A GPU on a second PCI function with OpenCL only (AMD), and the Matrox VGA left out. */
static const expected_device_t wholeio_gpus[] = {
    {"", "0000:03:00.0", "0"},
    {"", "0000:83:00.0", "1"},
    {"cuda0", "0000:84:00.0", "1"},
    {"opencl0d1", "0000:84:00.1", "1"},
};
static const expected_device_t wholeio_nics[] = {
    {"mlx5_0", "0000:04:00.0", "1"},
    {"eth0", "0000:81:00.0", "1"},
    {"eth1", "0000:81:00.1", "1"},
};
/* hwloc 1.x exports (read by hwloc 2): GPUs with DRM osdevs only (card1, renderD128), no name. */
static const expected_device_t corona_v1_gpus[] = {
    {"", "0000:13:00.0", "1"},
    {"", "0000:23:00.0", "2"},
    {"", "0000:53:00.0", "5"},
    {"", "0000:73:00.0", "7"},
};
static const expected_device_t ulna_gpus[] = {{"", "0000:02:00.0", "0"}, {"", "0000:82:00.0", "1"}};
static const expected_device_t ulna_nics[] = {
    {"mlx5_0", "0000:0a:00.0", "0"},
    {"mlx5_1", "0000:16:00.0", "0"},
    {"mlx5_2", "0000:16:00.1", "0"},
    {"mlx5_3", "0000:92:00.0", "1"},
};
/* POWER9 nodes in hwloc 1.x: the GPUs' memory shows as four more NUMA nodes without cores. */
static const expected_device_t coral_v1_gpus[] = {
    {"", "0004:04:00.0", "0"},
    {"", "0004:05:00.0", "0"},
    {"", "0035:03:00.0", "8"},
    {"", "0035:04:00.0", "8"},
};
static const expected_device_t coral_ea_gpus[] = {
    {"", "0002:01:00.0", "0"},
    {"", "0003:01:00.0", "0"},
    {"", "0006:01:00.0", "1"},
    {"", "0007:01:00.0", "1"},
};
static const expected_device_t dgx_gpus[] = {
    {"cuda0", "0000:07:00.0", "3"}, {"cuda1", "0000:0f:00.0", "3"}, {"cuda2", "0000:47:00.0", "1"},
    {"cuda3", "0000:4e:00.0", "1"}, {"cuda4", "0000:87:00.0", "7"}, {"cuda5", "0000:90:00.0", "7"},
    {"cuda6", "0000:b7:00.0", "5"}, {"cuda7", "0000:bd:00.0", "5"},
};

static const expected_machine_t machines[] = {
    {"juwels-booster.xml", 8, 48, juwels_gpus, N(juwels_gpus), juwels_nics, N(juwels_nics)},
    {"juwels-booster-cgroup.xml", 8, 45, juwels_gpus, N(juwels_gpus), juwels_nics, N(juwels_nics)},
    {"dgx-a100.xml", 8, 128, dgx_gpus, N(dgx_gpus), NULL, -1},
    {"shared/epyc-corona.xml", 8, 48, corona_gpus, N(corona_gpus), corona_nics, N(corona_nics)},
    {"shared/eas-tioga.xml", 4, 64, tioga_gpus, N(tioga_gpus), tioga_nics, N(tioga_nics)},
    {"shared/coral-lassen.xml", 2, 40, lassen_gpus, N(lassen_gpus), lassen_nics, N(lassen_nics)},
    {"shared/epyc-corona-p2.xml", 2, 48, corona_p2_gpus, N(corona_p2_gpus), corona_p2_nics, N(corona_p2_nics)},
    {"shared/g4dnmetal.xml", 2, 48, g4dn_gpus, N(g4dn_gpus), g4dn_nics, N(g4dn_nics)},
    {"shared/cts1-pascal.xml", 2, 36, pascal_gpus, N(pascal_gpus), pascal_nics, N(pascal_nics)},
    {"shared/power8gpudistances.xml", 2, 8, power8_gpus, N(power8_gpus), NULL, 0},
    {"shared/24em64t-2n6c2t-pci.xml", 2, 12, em64t_gpus, N(em64t_gpus), em64t_nics, N(em64t_nics)},
    {"shared/32em64t-2n8c2t-pci-wholeio.xml", 2, 16, wholeio_gpus, N(wholeio_gpus), wholeio_nics, N(wholeio_nics)},
    {"shared/16amd64-8n2c-cpusets.xml", 5, 4, NULL, 0, NULL, 0},
    {"epyc-corona-hwloc1.xml", 8, 48, corona_v1_gpus, N(corona_v1_gpus), corona_nics, N(corona_nics)},
    {"arm64-ulna-hwloc1.xml", 2, 64, ulna_gpus, N(ulna_gpus), ulna_nics, N(ulna_nics)},
    {"coral-lassen-hwloc1.xml", 6, 40, coral_v1_gpus, N(coral_v1_gpus), lassen_nics, N(lassen_nics)},
    {"coral-butte-hwloc1.xml", 6, 44, coral_v1_gpus, N(coral_v1_gpus), lassen_nics, N(lassen_nics)},
    {"coral-rzansel-hwloc1.xml", 6, 44, coral_v1_gpus, N(coral_v1_gpus), lassen_nics, N(lassen_nics)},
    {"coral-ea-hwloc1.xml", 2, 20, coral_ea_gpus, N(coral_ea_gpus), NULL, -1},
};

static void assert_list(hwloc_const_bitmap_t set, const char *expected, const char *what)
{
    char *got = cpulist_format(set);
    if (strcmp(got, expected) != 0)
        fail_msg("%s: expected %s, got %s", what, expected, got);
    free(got);
}

static void check_machine(const expected_machine_t *m)
{
    topo_t *t = fixture_load(m->file);
    assert_int_equal(t->nnuma, m->nnuma);
    assert_int_equal(t->ncores, m->ncores);
    assert_int_equal(t->ngpus, m->ngpus);
    for (int i = 0; i < m->ngpus; i++) {
        char what[128];
        snprintf(what, sizeof what, "%s GPU%d numa", m->file, i);
        assert_int_equal(t->gpus[i].index, i);
        assert_string_equal(t->gpus[i].name, m->gpus[i].name);
        assert_string_equal(t->gpus[i].pci, m->gpus[i].pci);
        assert_list(t->gpus[i].numa, m->gpus[i].numa, what);
    }
    if (m->nnics >= 0) {
        assert_int_equal(t->nnics, m->nnics);
        for (int i = 0; i < m->nnics; i++) {
            char what[128];
            snprintf(what, sizeof what, "%s NIC %s numa", m->file, m->nics[i].name);
            assert_string_equal(t->nics[i].name, m->nics[i].name);
            assert_string_equal(t->nics[i].pci, m->nics[i].pci);
            assert_list(t->nics[i].numa, m->nics[i].numa, what);
        }
    }
    topo_free(t);
}

static void every_machine_shows_gpu_and_nic_locality_as_lstopo_does(void **state)
{
    (void)state;
    for (int i = 0; i < N(machines); i++)
        check_machine(&machines[i]);
}

/* Display controllers as hwloc records them: (file, PCI bus id, whether it is a GPU). The AMD
 * boards are VGA class like the BMCs; only their device id tells them apart (topo_devices.c). */
static void bmc_vgas_are_not_gpus_and_amd_vga_compute_boards_are(void **state)
{
    (void)state;
    static const struct {
        const char *file, *pci, *what;
        int gpu;
    } devices[] = {
        {"epyc-corona-hwloc1.xml", "0000:13:00.0", "AMD MI50 (VGA 1002:66a1, DRM osdevs only)", 1},
        {"epyc-corona-hwloc1.xml", "0000:73:00.0", "AMD MI50 (VGA 1002:66a1, DRM osdevs only)", 1},
        {"epyc-corona-hwloc1.xml", "0000:05:00.0", "ASPEED BMC (VGA 1a03:2000)", 0},
        {"shared/epyc-corona.xml", "0000:05:00.0", "ASPEED BMC (VGA 1a03:2000)", 0},
        {"shared/24em64t-2n6c2t-pci.xml", "0000:01:03.0", "ATI ES1000 (VGA 1002:515e)", 0},
        {"shared/32em64t-2n8c2t-pci-wholeio.xml", "0000:05:03.0", "Matrox G200eW BMC (VGA 102b:0532)", 0},
        {"shared/32em64t-2n8c2t-pci-wholeio.xml", "0000:83:00.0", "Tesla M2075 (3D 10de:1094, no osdev)", 1},
        {"arm64-ulna-hwloc1.xml", "0000:02:00.0", "AMD FirePro (display 1002:67a0, DRM osdevs only)", 1},
        {"arm64-ulna-hwloc1.xml", "0000:1e:00.0", "ASPEED BMC (VGA 1a03:2000)", 0},
        {"coral-lassen-hwloc1.xml", "0002:02:00.0", "ASPEED BMC (VGA 1a03:2000)", 0},
        {"dgx-a100.xml", "0000:e4:00.0", "ASPEED BMC (VGA 1a03:2000)", 0},
    };
    for (int i = 0; i < N(devices); i++) {
        topo_t *t = fixture_load(devices[i].file);
        int found = 0;
        for (int g = 0; g < t->ngpus; g++)
            found |= strcmp(t->gpus[g].pci, devices[i].pci) == 0;
        if (found != devices[i].gpu)
            fail_msg("%s %s, %s: %s", devices[i].file, devices[i].pci, devices[i].what,
                     found ? "taken for a GPU" : "not found as a GPU");
        topo_free(t);
    }
}

/* Tioga's GPUs hang off an L3 inside their domain: those 8 cores are the GPU's nearest. */
static void a_gpu_under_an_l3_has_that_l3s_cpus_as_nearest(void **state)
{
    (void)state;
    topo_t *t = fixture_load("shared/eas-tioga.xml");
    assert_list(t->gpus[0].cpus, "48-63,112-127", "rsmi0's domain");
    assert_list(t->gpus[0].nearest_cpus, "48-55,112-119", "rsmi0's L3");
    assert_list(t->gpus[1].nearest_cpus, "56-63,120-127", "rsmi1's L3");
    topo_free(t);
    t = fixture_load("juwels-booster.xml"); /* under its NUMA domain's Group: the whole domain */
    assert_true(hwloc_bitmap_isequal(t->gpus[0].nearest_cpus, t->gpus[0].cpus));
    topo_free(t);
}

static void juwels_booster_has_eight_domains_of_six_cores_in_two_l3s(void **state)
{
    (void)state;
    topo_t *t = fixture_load("juwels-booster.xml");
    assert_int_equal(t->npackages, 2);
    assert_int_equal(t->ncores_total, 48);
    assert_int_equal(t->npus_total, 96);
    for (int d = 0; d < 8; d++) {
        const topo_numa_t *n = &t->numa[d];
        char cpus[64], l3a[64], l3b[64];
        snprintf(cpus, sizeof cpus, "%d-%d,%d-%d", 6 * d, 6 * d + 5, 48 + 6 * d, 48 + 6 * d + 5);
        snprintf(l3a, sizeof l3a, "%d-%d,%d-%d", 6 * d, 6 * d + 2, 48 + 6 * d, 48 + 6 * d + 2);
        snprintf(l3b, sizeof l3b, "%d-%d,%d-%d", 6 * d + 3, 6 * d + 5, 48 + 6 * d + 3, 48 + 6 * d + 5);
        assert_int_equal(n->os_index, d);
        assert_int_equal(n->package, d / 4);
        assert_int_equal(n->ncores, 6);
        assert_int_equal(n->memory_bytes, 64ULL << 30);
        assert_int_equal(n->nl3, 2);
        assert_list(n->cpus, cpus, "domain cpus");
        assert_list(n->l3_cpus[0], l3a, "first L3");
        assert_list(n->l3_cpus[1], l3b, "second L3");
    }
    /* SMT siblings: core 0 has PUs 0 and 48; without --smt only the first is planned. */
    assert_list(t->cores[0].pus, "0,48", "core 0 PUs");
    assert_int_equal(t->cores[0].first_pu, 0);
    topo_free(t);
}

static void disallowed_pus_are_counted_but_never_plannable(void **state)
{
    (void)state;
    topo_t *t = fixture_load("juwels-booster-cgroup.xml");
    assert_int_equal(t->npus_total, 96);
    assert_int_equal(t->npus_allowed, 90);
    assert_int_equal(t->numa[0].ncores, 3);
    assert_int_equal(t->numa[0].nl3, 1);
    assert_list(t->numa[0].cpus, "3-5,51-53", "domain 0 without the cgroup's PUs");
    topo_free(t);
}

static void cpus_outside_every_domain_are_set_aside(void **state)
{
    (void)state;
    topo_t *t = fixture_load("shared/16amd64-8n2c-cpusets.xml");
    assert_list(t->unplaced, "0-1,12-15", "CPUs without a NUMA domain");
    /* Memory-only domains 4 and 5 exist but have no cores to plan on. */
    int d4 = topo_numa_by_os_index(t, 4);
    assert_true(d4 >= 0);
    assert_int_equal(t->numa[d4].ncores, 0);
    topo_free(t);
}

static void non_contiguous_numa_indexes_are_kept(void **state)
{
    (void)state;
    topo_t *t = fixture_load("shared/coral-lassen.xml");
    assert_int_equal(t->numa[0].os_index, 0);
    assert_int_equal(t->numa[1].os_index, 8);
    assert_int_equal(topo_numa_by_os_index(t, 8), 1);
    assert_int_equal(topo_numa_by_os_index(t, 1), -1);
    topo_free(t);
}

static void synthetic_topologies_without_l3_make_one_cache_group_per_domain(void **state)
{
    (void)state;
    topo_t *t = fixture_synthetic("pack:2 numa:2 core:3 pu:2");
    assert_int_equal(t->nnuma, 4);
    for (int d = 0; d < 4; d++)
        assert_int_equal(t->numa[d].nl3, 1);
    assert_int_equal(t->ngpus, 0);
    topo_free(t);
}

/* A domain's packages are every package with CPUs in it: the one above it, or all of those its
 * CPUs span when the memory hangs above the packages (cosched topo's PKG column). */
static void a_domain_above_two_packages_lists_both(void **state)
{
    (void)state;
    topo_t *t = fixture_synthetic("numa:1 pack:2 core:2 pu:1");
    assert_int_equal(t->nnuma, 1);
    assert_list(t->numa[0].packages, "0-1", "packages of a domain above both");
    topo_free(t);
    t = fixture_load("juwels-booster.xml");
    for (int d = 0; d < t->nnuma; d++)
        assert_list(t->numa[d].packages, d < 4 ? "0" : "1", "packages of a JUWELS Booster domain");
    topo_free(t);
}

static void missing_and_malformed_files_are_refused_with_the_reason(void **state)
{
    (void)state;
    char err[512];
    assert_null(topo_load("/nonexistent/node.xml", err, sizeof err));
    assert_non_null(strstr(err, "/nonexistent/node.xml"));
    assert_non_null(strstr(err, "No such file"));

    char path[] = "/tmp/cosched-test-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "not xml at all\n", 15), 15);
    close(fd);
    assert_null(topo_load(path, err, sizeof err));
    assert_non_null(strstr(err, "not an hwloc XML topology"));

    fd = open(path, O_WRONLY | O_TRUNC);
    const char *broken = "<?xml version=\"1.0\"?>\n<topology version=\"2.0\"><object type=\"Nonsense\"/></topology>\n";
    assert_int_equal(write(fd, broken, strlen(broken)), (ssize_t)strlen(broken));
    close(fd);
    assert_null(topo_load(path, err, sizeof err));
    assert_non_null(strstr(err, path));
    unlink(path);

    assert_null(topo_load_synthetic("not a synthetic string", err, sizeof err));
    assert_non_null(strstr(err, "synthetic"));
}

/* hwloc 3 writes XML format 3.0, which hwloc 2 refuses with EINVAL alone: the error says what the
 * file is, what this hwloc reads and how to export one it reads. The fixture with a 3.0 header. */
static void an_hwloc_3_export_is_refused_with_how_to_export_a_readable_one(void **state)
{
    (void)state;
    FILE *in = fopen(fixture_path("h100-1numa.xml"), "r");
    assert_non_null(in);
    char path[] = "/tmp/cosched-test-XXXXXX", line[4096], err[512] = "";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *out = fdopen(fd, "w");
    assert_non_null(out);
    while (fgets(line, sizeof line, in))
        fputs(strcmp(line, "<topology version=\"2.0\">\n") == 0 ? "<topology version=\"3.0\">\n" : line, out);
    fclose(in);
    fclose(out);
    assert_null(topo_load(path, err, sizeof err));
    assert_non_null(strstr(err, path));
    assert_non_null(strstr(err, "is hwloc XML format 3.0"));
    assert_non_null(strstr(err, "reads formats 1.x to 2.x"));
    assert_non_null(strstr(err, "lstopo --export-xml-flags v2 FILE.xml"));
    unlink(path);
}

/* hwloc 2.9 dies on a root without its complete nodeset (found by tests/fuzz); the file is
 * read in a child first, so the caller gets an error instead of the crash. */
static void files_hwloc_crashes_on_are_refused_and_the_caller_lives(void **state)
{
    (void)state;
    const char *crashes =
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<topology version=\"2.0\">\n"
        "<object type=\"Machine\" os_index=\"0\" cpuset=\"0x1\" complete_cpuset=\"0x1\" allowed_cpuset=\"0x1\""
        " nodeset=\"0x1\" allowed_nodeset=\"0x1\" gp_index=\"1\">\n"
        "<object type=\"NUMANode\" os_index=\"0\" cpuset=\"0x1\" complete_cpuset=\"0x1\" nodeset=\"0x1\""
        " complete_nodeset=\"0x1\" gp_index=\"2\" local_memory=\"1073741824\"/>\n"
        "<object type=\"PU\" os_index=\"0\" cpuset=\"0x1\" complete_cpuset=\"0x1\" nodeset=\"0x1\""
        " complete_nodeset=\"0x1\" gp_index=\"3\"/>\n</object>\n</topology>\n";
    char path[] = "/tmp/cosched-test-XXXXXX", err[512] = "";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, crashes, strlen(crashes)), (ssize_t)strlen(crashes));
    close(fd);
    assert_null(topo_load(path, err, sizeof err));
    assert_non_null(strstr(err, path));
    assert_non_null(strstr(err, "hwloc crashes reading this file"));
    unlink(path);
}

/* What `HWLOC_XMLFILE=FILE slurmd -C` (Slurm 22.05) prints for each file, as counts: CPUs, Boards,
 * SocketsPerBoard x Boards, CoresPerSocket x sockets. 16amd64's eight Groups under the root are
 * boards to slurmd; its six packages hold ten cores. */
static void every_machine_counts_boards_sockets_cores_and_cpus_as_slurmd_does(void **state)
{
    (void)state;
    static const struct {
        const char *file;
        topo_slurm_counts_t want;
    } nodes[] = {
        {"juwels-booster.xml", {1, 2, 48, 96}},
        {"juwels-booster-cgroup.xml", {1, 2, 48, 96}},
        {"dgx-a100.xml", {1, 2, 128, 256}},
        {"h100-1numa.xml", {1, 1, 16, 16}},
        {"2socket-3plus1.xml", {1, 2, 32, 64}},
        {"ci-2core-gpu.xml", {1, 1, 2, 2}},
        {"arm64-ulna-hwloc1.xml", {1, 2, 64, 256}},
        {"coral-ea-hwloc1.xml", {1, 2, 20, 160}},
        {"coral-butte-hwloc1.xml", {1, 2, 44, 176}},
        {"shared/coral-lassen.xml", {1, 2, 40, 160}},
        {"shared/eas-tioga.xml", {1, 1, 64, 128}},
        {"shared/24em64t-2n6c2t-pci.xml", {1, 2, 12, 24}},
        {"shared/power8gpudistances.xml", {1, 2, 8, 16}},
        {"shared/16amd64-8n2c-cpusets.xml", {8, 6, 10, 10}},
    };
    for (int i = 0; i < N(nodes); i++) {
        topo_t *t = fixture_load(nodes[i].file);
        const topo_slurm_counts_t *got = &t->slurm, *want = &nodes[i].want;
        if (got->boards != want->boards || got->sockets != want->sockets || got->cores != want->cores ||
            got->cpus != want->cpus)
            fail_msg("%s: boards %d sockets %d cores %d cpus %d, slurmd counts %d %d %d %d", nodes[i].file, got->boards,
                     got->sockets, got->cores, got->cpus, want->boards, want->sockets, want->cores, want->cpus);
        topo_free(t);
    }
}

/* Slurm's core ids are hwloc's logical Core indexes over the whole node, disallowed cores included,
 * so they differ from OS PU numbers wherever SMT siblings interleave. */
static void each_domain_knows_its_slurm_core_ids(void **state)
{
    (void)state;
    topo_t *t = fixture_load("juwels-booster-cgroup.xml");
    assert_list(t->numa[0].core_ids, "0-5", "domain 0, cores 0-2 outside the cgroup");
    assert_list(t->numa[3].core_ids, "18-23", "domain 3");
    topo_free(t);
    t = fixture_load("shared/24em64t-2n6c2t-pci.xml"); /* core c of socket s: PUs 2c+s, 2c+s+12 */
    assert_list(t->numa[1].core_ids, "6-11", "socket 1 cores");
    assert_list(t->numa[1].cpus, "1,3,5,7,9,11,13,15,17,19,21,23", "socket 1 PUs");
    topo_free(t);
    t = fixture_load("shared/coral-lassen.xml"); /* domains 0 and 8 */
    assert_list(t->numa[1].core_ids, "20-39", "domain 8");
    topo_free(t);
}

static void gpus_carry_the_model_and_render_node_slurm_autodetects(void **state)
{
    (void)state;
    topo_t *t = fixture_load("juwels-booster.xml");
    assert_string_equal(t->gpus[0].model, "NVIDIA A100-SXM4-40GB");
    assert_string_equal(t->gpus[0].render_node, "");
    assert_string_equal(t->hostname, "jwb0001");
    assert_int_equal(t->memory_bytes, 8 * (64ULL << 30));
    topo_free(t);
    t = fixture_load("shared/eas-tioga.xml"); /* RSMI */
    assert_string_equal(t->gpus[0].model, "AMD INSTINCT MI200 (MCM) OAM LC MBA HPE C2");
    topo_free(t);
    t = fixture_load("shared/epyc-corona.xml"); /* OpenCL's "Vega 20" is not what rsmi would say */
    assert_string_equal(t->gpus[0].model, "");
    topo_free(t);
    t = fixture_load("epyc-corona-hwloc1.xml"); /* DRM osdevs only */
    assert_string_equal(t->gpus[0].render_node, "renderD128");
    assert_string_equal(t->gpus[3].render_node, "renderD131");
    assert_string_equal(t->gpus[0].model, "");
    topo_free(t);
}

static void cosched_topology_variable_is_used_only_without_an_explicit_file(void **state)
{
    (void)state;
    setenv("COSCHED_TOPOLOGY", "/from/env.xml", 1);
    assert_string_equal(topo_source_from_env(NULL), "/from/env.xml");
    assert_string_equal(topo_source_from_env("/explicit.xml"), "/explicit.xml");
    setenv("COSCHED_TOPOLOGY", "", 1);
    assert_null(topo_source_from_env(NULL));
    unsetenv("COSCHED_TOPOLOGY");
}

/* Kinds as `hwloc-calc -i FILE --cpukind N all` and `lstopo-no-graphics -i FILE --cpukinds` print
 * them (hwloc 2.9 ranks IntelCore above IntelAtom on import). Every core carries its kind and,
 * where two kinds or more are ranked, that kind's efficiency; elsewhere 0, so that plans stay. */
static void hybrid_cpus_carry_their_kind_and_its_rank(void **state)
{
    (void)state;
    static const struct {
        const char *file;
        int nkinds;
        const char *kind_cpus[2]; /* hwloc's order: least performant first */
        const char *core_type[2];
        int ncores[2];
    } nodes[] = {
        {"alderlake-gpu.xml", 2, {"16-23", "0-15"}, {"IntelAtom", "IntelCore"}, {8, 8}},
        {"hybrid-2gpu.xml", 2, {"0-15,32-47", "16-31,48-63"}, {"IntelAtom", "IntelCore"}, {32, 16}},
        {"shared/power8gpudistances.xml", 1, {"0-1,8-9,16-17,24-25,80-81,88-89,96-97,104-105"}, {""}, {8}},
        {"juwels-booster.xml", 0, {NULL}, {NULL}, {0}},
    };
    for (int i = 0; i < N(nodes); i++) {
        topo_t *t = fixture_load(nodes[i].file);
        assert_int_equal(t->nkinds, nodes[i].nkinds);
        for (int k = 0; k < t->nkinds; k++) {
            assert_int_equal(t->kinds[k].efficiency, t->nkinds > 1 ? k : 0);
            assert_string_equal(t->kinds[k].core_type, nodes[i].core_type[k]);
            assert_int_equal(t->kinds[k].ncores, nodes[i].ncores[k]);
            assert_list(t->kinds[k].cpus, nodes[i].kind_cpus[k], nodes[i].file);
        }
        for (int c = 0; c < t->ncores; c++) {
            const topo_core_t *core = &t->cores[c];
            if (t->nkinds == 0) {
                assert_int_equal(core->kind, -1);
                assert_int_equal(core->perf, 0);
                continue;
            }
            assert_true(hwloc_bitmap_isincluded(core->pus, t->kinds[core->kind].cpus));
            assert_int_equal(core->perf, t->nkinds > 1 ? core->kind : 0);
        }
        topo_free(t);
    }
}

static void the_live_machine_loads(void **state)
{
    (void)state;
    char err[512];
    topo_t *t = topo_load(NULL, err, sizeof err);
    assert_non_null(t);
    assert_true(t->nnuma >= 1);
    assert_true(t->ncores >= 1);
    assert_string_equal(t->source, "this machine");
    assert_true(t->slurm.cpus >= t->npus_allowed && t->slurm.sockets >= 1 && t->memory_bytes > 0);
    topo_free(t);
}

/* A cgroup's cpuset.mems without NUMA 1 and 3 (and its cpuset.cpus without NUMA 3's CPUs): both
 * domains stay, with their CPUs, Slurm core ids and devices; what may be bound is said apart. */
static void disallowed_numa_nodes_keep_their_cpus_cores_and_devices(void **state)
{
    (void)state;
    topo_t *t = fixture_load("juwels-booster-numa-cgroup.xml");
    assert_int_equal(t->nnuma, 8);
    const topo_numa_t *d1 = &t->numa[1], *d3 = &t->numa[3];
    assert_false(d1->mem_allowed);
    assert_false(d3->mem_allowed);
    assert_true(t->numa[0].mem_allowed);
    assert_int_equal(d3->ncores, 0);
    assert_list(d3->core_ids, "18-23", "NUMA 3's Slurm core ids");
    assert_list(d3->node_cpuset, "18-23,66-71", "NUMA 3's CPUs");
    assert_int_equal(d1->ncores, 6);
    assert_list(d1->cpus, "6-11,54-59", "NUMA 1's allowed CPUs are planned");
    assert_list(d1->mems, "0,2", "NUMA 1's ranks bind the nearest allowed memory");
    assert_list(d3->mems, "0,2", "so would NUMA 3's");
    assert_list(t->numa[0].mems, "0", "NUMA 0 binds itself");
    assert_false(d1->memory_only || d3->memory_only);
    assert_list(t->gpus[0].numa, "3", "GPU0 is still local to NUMA 3");
    assert_list(t->gpus[0].cpus, "", "with no allowed CPU there");
    assert_list(t->nics[0].numa, "3", "and so is mlx5_0");
    assert_list(t->gpus[1].numa, "1", "GPU1");
    assert_list(t->gpus[1].cpus, "6-11,54-59", "GPU1's allowed CPUs");
    topo_free(t);
}

/* HBM beside each domain (same CPUs) and CXL memory under socket 0: memory-only domains that keep
 * the CPUs hwloc gives them; every PU's home is the plain domain. */
static void memory_only_domains_keep_their_local_cpus_and_kind(void **state)
{
    (void)state;
    topo_t *t = fixture_load("spr-hbm-cxl.xml");
    assert_int_equal(t->nnuma, 9);
    for (int d = 0; d < 4; d++) {
        assert_false(t->numa[d].memory_only);
        assert_int_equal(t->numa[d].ncores, 4);
        assert_string_equal(t->numa[d].kind, "");
    }
    const topo_numa_t *hbm = &t->numa[4], *cxl = &t->numa[8];
    assert_true(hbm->memory_only && hbm->high_bandwidth);
    assert_string_equal(hbm->kind, "HBM");
    assert_int_equal(hbm->ncores, 0);
    assert_list(hbm->local_cpus, "0-3,16-19", "HBM 4: NUMA 0's CPUs");
    assert_list(t->numa[7].local_cpus, "12-15,28-31", "HBM 7: NUMA 3's CPUs");
    assert_true(cxl->memory_only && !cxl->high_bandwidth);
    assert_string_equal(cxl->kind, "DRAM");
    assert_list(cxl->local_cpus, "0-7,16-23", "CXL 8: socket 0's CPUs");
    assert_list(t->numa[0].hbm, "4", "NUMA 0's HBM");
    assert_list(t->numa[3].hbm, "7", "NUMA 3's HBM");
    assert_list(t->numa[0].mems, "0", "NUMA 0 binds itself");
    assert_list(t->gpus[0].numa, "0,4,8", "cuda0, as hwloc-calc os=cuda0 -I numa");
    assert_list(t->numa[1].core_ids, "4-7", "Slurm core ids follow the plain domains");
    topo_free(t);
    t = fixture_load("coral-lassen-hwloc1.xml"); /* GPU memory: no CPUs from hwloc, none here */
    int g = topo_numa_by_os_index(t, 252);
    assert_true(g >= 0 && t->numa[g].memory_only && !t->numa[g].high_bandwidth);
    assert_list(t->numa[g].local_cpus, "", "GPU memory has no CPUs");
    topo_free(t);
}

/* KNL in flat mode: DDR and MCDRAM with the same CPUs. Every PU's home is the DDR node, also when
 * the MCDRAM node has the lower OS index (the same file with the subtype moved to node 0). */
static void mcdram_beside_ddr_is_memory_only_whatever_its_os_index(void **state)
{
    (void)state;
    topo_t *t = fixture_load("knl-flat-mcdram.xml");
    assert_int_equal(t->nnuma, 2);
    assert_int_equal(t->numa[0].ncores, 8);
    assert_false(t->numa[0].memory_only);
    assert_true(t->numa[1].memory_only && t->numa[1].high_bandwidth);
    assert_string_equal(t->numa[1].kind, "MCDRAM");
    assert_list(t->numa[1].local_cpus, "0-31", "MCDRAM's CPUs");
    assert_list(t->numa[0].hbm, "1", "DDR's MCDRAM");
    topo_free(t);

    FILE *in = fopen(fixture_path("knl-flat-mcdram.xml"), "r");
    assert_non_null(in);
    static char xml[65536];
    size_t n = fread(xml, 1, sizeof xml - 1, in);
    fclose(in);
    xml[n] = '\0';
    const char *tag = "<object type=\"NUMANode\" os_index=\"0\"";
    char *mark = strstr(xml, " subtype=\"MCDRAM\""), *node0 = strstr(xml, tag);
    assert_non_null(mark);
    assert_non_null(node0);
    char path[] = "/tmp/cosched-test-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *out = fdopen(fd, "w");
    size_t head = (size_t)(node0 - xml) + strlen(tag);
    fwrite(xml, 1, head, out);
    fputs(" subtype=\"MCDRAM\"", out);
    fwrite(xml + head, 1, (size_t)(mark - xml) - head, out);
    fputs(mark + strlen(" subtype=\"MCDRAM\""), out);
    fclose(out);
    char err[512];
    t = topo_load(path, err, sizeof err);
    unlink(path);
    assert_non_null(t);
    assert_string_equal(t->numa[0].kind, "MCDRAM");
    assert_true(t->numa[0].memory_only);
    assert_int_equal(t->numa[1].ncores, 8);
    assert_list(t->numa[1].hbm, "0", "node 1's MCDRAM");
    topo_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_machine_shows_gpu_and_nic_locality_as_lstopo_does),
        cmocka_unit_test(bmc_vgas_are_not_gpus_and_amd_vga_compute_boards_are),
        cmocka_unit_test(a_gpu_under_an_l3_has_that_l3s_cpus_as_nearest),
        cmocka_unit_test(juwels_booster_has_eight_domains_of_six_cores_in_two_l3s),
        cmocka_unit_test(disallowed_pus_are_counted_but_never_plannable),
        cmocka_unit_test(cpus_outside_every_domain_are_set_aside),
        cmocka_unit_test(non_contiguous_numa_indexes_are_kept),
        cmocka_unit_test(synthetic_topologies_without_l3_make_one_cache_group_per_domain),
        cmocka_unit_test(missing_and_malformed_files_are_refused_with_the_reason),
        cmocka_unit_test(files_hwloc_crashes_on_are_refused_and_the_caller_lives),
        cmocka_unit_test(an_hwloc_3_export_is_refused_with_how_to_export_a_readable_one),
        cmocka_unit_test(a_domain_above_two_packages_lists_both),
        cmocka_unit_test(every_machine_counts_boards_sockets_cores_and_cpus_as_slurmd_does),
        cmocka_unit_test(each_domain_knows_its_slurm_core_ids),
        cmocka_unit_test(gpus_carry_the_model_and_render_node_slurm_autodetects),
        cmocka_unit_test(cosched_topology_variable_is_used_only_without_an_explicit_file),
        cmocka_unit_test(hybrid_cpus_carry_their_kind_and_its_rank),
        cmocka_unit_test(the_live_machine_loads),
        cmocka_unit_test(disallowed_numa_nodes_keep_their_cpus_cores_and_devices),
        cmocka_unit_test(memory_only_domains_keep_their_local_cpus_and_kind),
        cmocka_unit_test(mcdram_beside_ddr_is_memory_only_whatever_its_os_index),
    };
    return cmocka_run_group_tests_name("topo_load", tests, NULL, NULL);
}
