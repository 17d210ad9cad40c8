/* test_gpu_sampler: the GPU sampler against the stand-in NVML and ROCm SMI of tests/daemon/fakegpu
 * (found through LD_LIBRARY_PATH, as the driver's own would be): GPUs matched by PCI bus id
 * whatever order the library lists them in, windows of their busy fraction, and every way a
 * library can fail — not there, not initialising, a GPU it does not know, a GPU lost, readings
 * failing, MIG — as a state with its reason. Waits are bounded polls, never speed assertions. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpu_backend.h"
#include "gpu_sampler.h"
#include "topo.h"

typedef struct fixture {
    char dir[64], ctl[128];
    topo_t *topo;
    gpu_sampler_t *s;
} fixture_t;

static fixture_t fx;

static void load_topology(const char *name)
{
    char path[512], err[256];
    snprintf(path, sizeof path, "%s/tests/topologies/%s", getenv("COSCHED_SOURCE_ROOT"), name);
    fx.topo = topo_load(path, err, sizeof err);
    if (!fx.topo)
        fail_msg("%s: %s", path, err);
}

/* The control file, replaced whole (the fake reads it whenever it changes). */
static void control(const char *text)
{
    char tmp[160];
    snprintf(tmp, sizeof tmp, "%s.new", fx.ctl);
    FILE *f = fopen(tmp, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    assert_int_equal(rename(tmp, fx.ctl), 0);
}

static int setup(void **state)
{
    (void)state;
    memset(&fx, 0, sizeof fx);
    snprintf(fx.dir, sizeof fx.dir, "/tmp/cosched-gpu-XXXXXX");
    assert_non_null(mkdtemp(fx.dir));
    snprintf(fx.ctl, sizeof fx.ctl, "%s/gpu.ctl", fx.dir);
    setenv("COSCHED_FAKE_GPU", fx.ctl, 1);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    gpu_sampler_stop(fx.s);
    topo_free(fx.topo);
    char path[160];
    snprintf(path, sizeof path, "%s.new", fx.ctl);
    unlink(path);
    unlink(fx.ctl);
    rmdir(fx.dir);
    return 0;
}

static void start(const char *nvml_library)
{
    gpu_sampler_config_t cfg = {.window = 0.2, .retry = 0.2, .nvml_library = nvml_library};
    char err[256];
    fx.s = gpu_sampler_start(fx.topo, &cfg, err, sizeof err);
    if (!fx.s)
        fail_msg("%s", err);
}

static void nap(void)
{
    struct timespec ts = {0, 10 * 1000000L};
    nanosleep(&ts, NULL);
}

static double seconds_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Poll until GPU gpu is in `state`, a minute at most (valgrind, a loaded machine); its status then. */
static gpu_status_t wait_state(int gpu, gpu_state_t state)
{
    gpu_status_t st;
    gpu_window_t w[GPU_SAMPLER_RING];
    for (double end = seconds_now() + 60; seconds_now() < end;) {
        gpu_sampler_take(fx.s, w, GPU_SAMPLER_RING);
        gpu_sampler_status(fx.s, gpu, &st);
        if (st.state == state)
            return st;
        nap();
    }
    fail_msg("GPU %d is %s (%s), not %s", gpu, gpu_state_name(st.state), st.detail, gpu_state_name(state));
    return st;
}

/* The next window in which GPU gpu has a reading (a minute at most). */
static double next_busy(int gpu)
{
    gpu_window_t w[GPU_SAMPLER_RING];
    for (double end = seconds_now() + 60; seconds_now() < end;) {
        int n = gpu_sampler_take(fx.s, w, GPU_SAMPLER_RING);
        for (int k = n - 1; k >= 0; k--)
            if (w[k].busy[gpu] >= 0)
                return w[k].busy[gpu];
        nap();
    }
    fail_msg("no window with a reading of GPU %d", gpu);
    return -1;
}

static void pci_ids_compare_as_numbers(void **state)
{
    (void)state;
    unsigned d, b, dev, f;
    assert_true(gpu_pci_parse("00000000:3B:00.0", &d, &b, &dev, &f));
    assert_int_equal(d, 0);
    assert_int_equal(b, 0x3b);
    assert_true(gpu_pci_parse("0001:3b:1f.7", &d, &b, &dev, &f));
    assert_int_equal(d, 1);
    assert_int_equal(dev, 0x1f);
    assert_int_equal(f, 7);
    assert_true(gpu_pci_parse("3b:00.0", &d, &b, &dev, &f));
    assert_int_equal(d, 0);
    assert_false(gpu_pci_parse("0000:3b:20.0", &d, &b, &dev, &f)); /* device is 5 bits */
    assert_false(gpu_pci_parse("0000:3b:00.0 ", &d, &b, &dev, &f));
    assert_false(gpu_pci_parse("cuda0", &d, &b, &dev, &f));
    assert_false(gpu_pci_parse("", &d, &b, &dev, &f));
}

static void an_nvidia_gpu_is_sampled_window_by_window(void **state)
{
    (void)state;
    load_topology("ci-2core-gpu.xml");
    control("gpu 0000:03:00.0 busy 0.62\n");
    start(NULL);
    gpu_status_t st = wait_state(0, GPU_SAMPLING);
    assert_string_equal(st.backend, "nvml");
    assert_true(fabs(next_busy(0) - 0.62) < 1e-9);
}

/* The library lists them in another order than PCI: each GPU gets its own line's busy fraction. */
static void nvidia_gpus_are_matched_by_pci_bus_id(void **state)
{
    (void)state;
    load_topology("dgx-a100.xml");
    control("gpu 0000:bd:00.0 busy 0.80\n"
            "gpu 0000:07:00.0 busy 0.10\n"
            "gpu 0000:47:00.0 busy 0.30\n"
            "gpu 0000:0f:00.0 busy 0.20\n"
            "gpu 0000:87:00.0 busy 0.50\n"
            "gpu 0000:4e:00.0 busy 0.40\n"
            "gpu 0000:b7:00.0 busy 0.70\n"
            "gpu 0000:90:00.0 busy 0.60\n");
    start(NULL);
    for (int g = 0; g < 8; g++)
        wait_state(g, GPU_SAMPLING);
    for (int g = 0; g < 8; g++)
        assert_true(fabs(next_busy(g) - 0.1 * (g + 1)) < 1e-9);
}

/* ROCm SMI indexes GPUs its own way (LLNL Corona: not PCI order); its BDFID is decoded with the
 * partition bits ignored. */
static void amd_gpus_are_matched_by_pci_bus_id_through_rocm_smi(void **state)
{
    (void)state;
    load_topology("epyc-corona-hwloc1.xml");
    control("gpu 0000:73:00.0 busy 0.44\n"
            "gpu 0000:13:00.0 busy 0.11\n"
            "gpu 0000:53:00.0 busy 0.33\n"
            "gpu 0000:23:00.0 busy 0.22\n");
    start(NULL);
    for (int g = 0; g < 4; g++) {
        gpu_status_t st = wait_state(g, GPU_SAMPLING);
        assert_string_equal(st.backend, "rocm-smi");
    }
    for (int g = 0; g < 4; g++)
        assert_true(fabs(next_busy(g) - 0.11 * (g + 1)) < 1e-9);
}

static void a_product_without_samples_is_read_through_its_utilisation_rates(void **state)
{
    (void)state;
    load_topology("ci-2core-gpu.xml");
    control("samples unsupported\ngpu 0000:03:00.0 busy 0.37\n");
    start(NULL);
    wait_state(0, GPU_SAMPLING);
    assert_true(fabs(next_busy(0) - 0.37) < 1e-9);
}

static void a_missing_library_is_a_state_with_its_reason(void **state)
{
    (void)state;
    load_topology("ci-2core-gpu.xml");
    control("gpu 0000:03:00.0 busy 0.5\n");
    start("libnvidia-ml-not-here.so.1");
    gpu_status_t st = wait_state(0, GPU_UNAVAILABLE);
    assert_non_null(strstr(st.detail, "cannot load libnvidia-ml-not-here.so.1"));
}

static void a_driver_that_does_not_initialise_is_said_and_retried(void **state)
{
    (void)state;
    load_topology("ci-2core-gpu.xml");
    control("init fail\ngpu 0000:03:00.0 busy 0.5\n");
    start(NULL);
    gpu_status_t st = wait_state(0, GPU_UNAVAILABLE);
    assert_non_null(strstr(st.detail, "nvmlInit_v2 failed: Driver Not Loaded (9)"));
    control("gpu 0000:03:00.0 busy 0.5\n"); /* the driver came up after coschedd */
    wait_state(0, GPU_SAMPLING);
}

static void a_gpu_the_library_does_not_know_is_unavailable(void **state)
{
    (void)state;
    load_topology("dgx-a100.xml");
    control("gpu 0000:07:00.0 busy 0.5\n"); /* GPU 0 only; the topology has eight */
    start(NULL);
    wait_state(0, GPU_SAMPLING);
    gpu_status_t st = wait_state(1, GPU_UNAVAILABLE);
    assert_string_equal(st.detail, "NVML has no GPU at PCI 0000:0f:00.0");
}

static void a_lost_gpu_has_no_readings_until_it_is_found_again(void **state)
{
    (void)state;
    load_topology("ci-2core-gpu.xml");
    control("gpu 0000:03:00.0 busy 0.5\n");
    start(NULL);
    wait_state(0, GPU_SAMPLING);
    control("gpu 0000:03:00.0 busy 0.5 state lost\n");
    gpu_status_t st = wait_state(0, GPU_LOST);
    assert_non_null(strstr(st.detail, "GPU is lost (15)"));
    assert_true(st.busy < 0);
    control("gpu 0000:03:00.0 busy 0.5\n");
    wait_state(0, GPU_SAMPLING);
}

static void failing_readings_and_mig_are_states_too(void **state)
{
    (void)state;
    load_topology("ci-2core-gpu.xml");
    control("gpu 0000:03:00.0 busy 0.5 state error\n");
    start(NULL);
    gpu_status_t st = wait_state(0, GPU_FAILING);
    assert_non_null(strstr(st.detail, "nvmlDeviceGetSamples: Unknown Error (999)"));
    assert_true(st.errors > 0);
    control("gpu 0000:03:00.0 busy 0.5 state mig\n");
    st = wait_state(0, GPU_LOST);
    assert_non_null(strstr(st.detail, "MIG mode?"));
}

static void a_gpu_of_another_vendor_is_not_sampled(void **state)
{
    (void)state;
    load_topology("ci-2core-gpu.xml");
    snprintf(fx.topo->gpus[0].vendor, sizeof fx.topo->gpus[0].vendor, "Intel");
    start(NULL);
    gpu_status_t st;
    gpu_sampler_status(fx.s, 0, &st);
    assert_int_equal(st.state, GPU_UNSAMPLED);
    assert_non_null(strstr(st.detail, "no busy-time library for Intel GPUs"));
    gpu_sampler_status(fx.s, 5, &st);
    assert_string_equal(st.detail, "not a GPU of this node");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pci_ids_compare_as_numbers),
        cmocka_unit_test_setup_teardown(an_nvidia_gpu_is_sampled_window_by_window, setup, teardown),
        cmocka_unit_test_setup_teardown(nvidia_gpus_are_matched_by_pci_bus_id, setup, teardown),
        cmocka_unit_test_setup_teardown(amd_gpus_are_matched_by_pci_bus_id_through_rocm_smi, setup, teardown),
        cmocka_unit_test_setup_teardown(a_product_without_samples_is_read_through_its_utilisation_rates, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_missing_library_is_a_state_with_its_reason, setup, teardown),
        cmocka_unit_test_setup_teardown(a_driver_that_does_not_initialise_is_said_and_retried, setup, teardown),
        cmocka_unit_test_setup_teardown(a_gpu_the_library_does_not_know_is_unavailable, setup, teardown),
        cmocka_unit_test_setup_teardown(a_lost_gpu_has_no_readings_until_it_is_found_again, setup, teardown),
        cmocka_unit_test_setup_teardown(failing_readings_and_mig_are_states_too, setup, teardown),
        cmocka_unit_test_setup_teardown(a_gpu_of_another_vendor_is_not_sampled, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
