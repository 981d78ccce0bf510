package controller

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"sortie/controller/clouds"
	"sortie/controller/config"
	"sortie/controller/store"
	"sortie/provision/price"
	"sortie/strategy/clocktest"
)

// The program running the controller starts its price refresher: the
// prices of config.yaml are in the controller's Book at once, read from
// the store.
func TestStartPricesFillsTheBook(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "state.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cfg := config.Config{}
	cfg.Sim.Prices.NodeHour = 0.25
	c := New(st, cfg, nil, nil)
	stop := StartPrices(ctx, c, cfg, clouds.Light())
	defer stop()
	key := price.Key{Cloud: "sim", Region: "sim-1", Zone: "sim-1a"}
	clocktest.Eventually(t, "the sim's price is in the book", func() bool {
		h := c.Prices.History(key, time.Now(), time.Now())
		return len(h) == 1 && h[0].PerHour == 0.25 && h[0].Source == "config.yaml sim.prices"
	})
	ps, err := st.Prices(ctx)
	if err != nil || len(ps) != 4 {
		t.Errorf("stored prices %+v (%v), want the node price of local and sim, spot and not", ps, err)
	}
}
