// Package profiling turns on the controller program's opt-in profiles. It
// is a package of its own so that the CLI, which never profiles, does not
// link net/http.
//
// It imports nothing else of sortie's: profiles are the controller program's
// alone.
package profiling

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"runtime"
	rpprof "runtime/pprof"
	"time"
)

// Start turns on the daemon's opt-in profiles, for finding what a
// large run spends its time and memory on:
//
//	SORTIE_CPUPROFILE=FILE  a CPU profile from start to stop
//	SORTIE_MEMPROFILE=FILE  a heap profile written at stop
//	SORTIE_PPROF=ADDR       net/http/pprof served on ADDR (e.g. 127.0.0.1:6060)
//
// It returns the function that ends them; nothing is on when none is set.
func Start(getenv func(string) string, log *slog.Logger) (stop func(), err error) {
	var stops []func()
	stop = func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	if path := getenv("SORTIE_CPUPROFILE"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			return stop, fmt.Errorf("SORTIE_CPUPROFILE: %w", err)
		}
		if err := rpprof.StartCPUProfile(f); err != nil {
			f.Close()
			return stop, fmt.Errorf("SORTIE_CPUPROFILE: %w", err)
		}
		stops = append(stops, func() { rpprof.StopCPUProfile(); f.Close() })
	}
	if path := getenv("SORTIE_MEMPROFILE"); path != "" {
		stops = append(stops, func() {
			f, err := os.Create(path)
			if err == nil {
				runtime.GC()
				err = rpprof.WriteHeapProfile(f)
				f.Close()
			}
			if err != nil {
				log.Warn("heap profile not written", "path", path, "err", err)
			}
		})
	}
	if addr := getenv("SORTIE_PPROF"); addr != "" {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			stop()
			return func() {}, fmt.Errorf("SORTIE_PPROF %q: %w (give HOST:PORT, e.g. 127.0.0.1:6060)", addr, err)
		}
		mux := http.NewServeMux()
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Warn("pprof server", "err", err)
			}
		}()
		log.Info("serving pprof", "addr", ln.Addr().String())
		stops = append(stops, func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			srv.Shutdown(ctx)
		})
	}
	return stop, nil
}
