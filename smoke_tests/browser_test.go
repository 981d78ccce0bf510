package smoke_tests

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// chromium is the browser the dashboard's tests drive: Debian's, which
// `make deps` installs.
func chromium(t *testing.T) string {
	t.Helper()
	for _, p := range []string{os.Getenv("SORTIE_CHROMIUM"), "/usr/bin/chromium", "chromium"} {
		if p == "" {
			continue
		}
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	if testing.Short() {
		t.Skip("chromium is not installed, and -short skips the browser's tests: `make deps` installs it")
	}
	t.Fatal("chromium is not installed (looked for /usr/bin/chromium and chromium on PATH; SORTIE_CHROMIUM names another): run `make deps`, which installs Debian's chromium")
	return ""
}

// browser starts a headless chromium of the test's own, with a fresh
// profile, and returns the context its actions run in, bounded by d. The
// browser is killed when the test ends.
func browser(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	path := chromium(t)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(filepath.Join(t.TempDir(), "profile")),
		// A laptop's screen: the pages must read well at this size.
		chromedp.WindowSize(1366, 768),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	// The first run starts the browser; it lives as long as ctx.
	if err := chromedp.Do(ctx); err != nil {
		cancelCtx()
		cancelAlloc()
		t.Fatalf("start %s: %v", path, err)
	}
	// The page has the focus, as a window in front does, so that :focus
	// styles apply as a person using the keyboard sees them.
	focus := chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.SetFocusEmulationEnabled, emulation.SetFocusEmulationEnabledParams{Enabled: true})
		return err
	})
	if err := chromedp.Do(ctx, focus); err != nil {
		cancelCtx()
		cancelAlloc()
		t.Fatalf("emulate focus: %v", err)
	}
	tctx, cancelT := context.WithTimeout(ctx, d)
	t.Cleanup(func() {
		cancelT()
		cancelCtx()
		cancelAlloc() // kills the browser and waits for it
	})
	return tctx
}

// screenshot keeps what the browser shows as DIR/name.png when
// SORTIE_SCREENSHOTS=DIR is set: controller/README.md's pictures of the pages.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv("SORTIE_SCREENSHOTS")
	if dir == "" {
		return
	}
	b, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}
