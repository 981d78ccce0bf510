package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"sortie/controller/clouds"
	"sortie/controller/config"
	"sortie/controller/daemon"
	"sortie/controller/metrics"
	"sortie/controller/notify"
	"sortie/controller/profiling"
	"sortie/controller/store"
)

// Serve runs the controller of h in this process until ctx ends or the
// process is told to stop, driving the clouds cls. It is the controller
// program's whole work; daemon.Run makes it the only one of its home.
func Serve(ctx context.Context, h string, log *slog.Logger, cls []clouds.Cloud) error {
	// c is set before ready closes: a SIGUSR1 that comes earlier has
	// nothing to wake, and the first tick reads the store anyway.
	var c *Controller
	ready := make(chan struct{})
	return daemon.Run(ctx, h, func(ctx context.Context) error {
		cfg, st, err := OpenHome(ctx, h)
		if err != nil {
			return err
		}
		defer st.Close()
		stopProfiles, err := profiling.Start(os.Getenv, log)
		defer stopProfiles()
		if err != nil {
			return err
		}
		provs := clouds.NewSet(cfg, cls)
		c = New(st, cfg, provs, log)
		provs.APICalls = c.Metrics.APICall
		stopMetrics, err := ServeMetrics(cfg.Controller.MetricsListen, c.Metrics, log)
		if err != nil {
			return err
		}
		defer stopMetrics()
		c.Pause, err = PauseFromEnv(os.Getenv, func(point string, job int64, attempt int) {
			log.Info("pause point", "point", point, "job", job, "attempt", attempt)
		})
		if err != nil {
			return err
		}
		close(ready)
		// Notifications are sent beside the loop, never in it: a slow
		// receiver holds up only the notifier's own goroutines.
		nctx, stopNotifier := context.WithCancel(ctx)
		notified := make(chan struct{})
		go func() {
			defer close(notified)
			NewNotifier(st, cfg, c.Log, c.Now).Run(nctx)
		}()
		defer func() { stopNotifier(); <-notified }()
		c.Log.Info("controller started", "home", h, "store", store.Redact(cfg.StoreURL()), "pid", os.Getpid(), "poll_interval", cfg.Controller.PollInterval.D())
		err = c.Run(ctx)
		// Run has waited for every step: the providers can save what
		// they keep (the sim's clusters) for the next controller.
		if cerr := provs.Close(); cerr != nil {
			c.Log.Warn("close providers", "err", cerr)
		}
		c.Log.Info("controller stopped")
		return err
	}, func() {
		select {
		case <-ready:
			c.Wake()
		default:
		}
	})
}

// ServeMetrics serves m at /metrics on addr (controller.metrics_listen)
// until the returned stop is called; an empty addr serves nothing. An
// address that cannot be listened on is an error naming the key.
func ServeMetrics(addr string, m *metrics.Metrics, log *slog.Logger) (stop func(), err error) {
	if addr == "" {
		return func() {}, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("controller.metrics_listen: cannot listen on %q: %w; give a free host:port, or leave it out to serve no metrics", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", m.Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("metrics server", "err", err)
		}
	}()
	log.Info("serving metrics", "addr", "http://"+ln.Addr().String()+"/metrics")
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		<-done
	}, nil
}

// NewNotifier sends the notifications of st's jobs to the webhooks of
// their tasks, or cfg's.
func NewNotifier(st *store.Store, cfg config.Config, log *slog.Logger, now func() time.Time) *notify.Notifier {
	return &notify.Notifier{Store: st, Default: cfg.Notify.Webhooks, Secrets: cfg.Notify.Secrets, Log: log, Now: now}
}

// OpenHome reads h's configuration and opens its store (controller.store,
// SORTIE_STORE, else the home's state.db).
func OpenHome(ctx context.Context, h string) (config.Config, *store.Store, error) {
	cfg, err := config.Load(h, os.Getenv)
	if err != nil {
		return cfg, nil, err
	}
	st, err := store.OpenURL(ctx, cfg.StoreURL(), nil)
	return cfg, st, err
}
