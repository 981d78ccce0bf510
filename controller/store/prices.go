package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Price is one row of the price cache: a price of one node-hour of an
// instance type in a region (and zone, for a price set per zone), spot or
// on-demand, in effect from Effective, read at ReadAt from Source. It is
// provision/price's Quote as the store keeps it (the store imports no
// provider package).
type Price struct {
	Cloud, Region, Zone, InstanceType string
	Spot                              bool
	PerHour                           float64
	Source                            string
	Effective, ReadAt                 time.Time
}

// PutPrices records prices read from the clouds, in one transaction: a
// price of a key already known at the same Effective time replaces it
// (its value, source and ReadAt), any other is added to the key's history.
func (s *Store) PutPrices(ctx context.Context, ps []Price) error {
	if len(ps) == 0 {
		return nil
	}
	err := s.tx(ctx, func(tx *dbTx) error {
		for _, p := range ps {
			spot := 0
			if p.Spot {
				spot = 1
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO prices (cloud, region, zone, instance_type, spot, effective_at, per_hour, source, read_at)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
				ON CONFLICT(cloud, region, zone, instance_type, spot, effective_at) DO UPDATE SET
					per_hour = excluded.per_hour, source = excluded.source, read_at = excluded.read_at`,
				p.Cloud, p.Region, p.Zone, p.InstanceType, spot, fmtTime(p.Effective), p.PerHour, p.Source, fmtTime(p.ReadAt)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("record %d prices: %w", len(ps), err)
	}
	return nil
}

// Prices returns every price the store holds, by key, each key's history
// oldest first.
func (s *Store) Prices(ctx context.Context) ([]Price, error) {
	ps, err := queryAll(ctx, s.db, scanPrice, `SELECT cloud, region, zone, instance_type, spot, effective_at, per_hour, source, read_at FROM prices
		ORDER BY cloud, region, zone, instance_type, spot, effective_at`)
	if err != nil {
		return nil, fmt.Errorf("read the prices: %w", err)
	}
	return ps, nil
}

func scanPrice(rows *sql.Rows) (Price, error) {
	var p Price
	var spot int
	var eff, read sql.NullString
	if err := rows.Scan(&p.Cloud, &p.Region, &p.Zone, &p.InstanceType, &spot, &eff, &p.PerHour, &p.Source, &read); err != nil {
		return p, err
	}
	p.Spot = spot != 0
	if t := parseTime(eff); t != nil {
		p.Effective = *t
	}
	if t := parseTime(read); t != nil {
		p.ReadAt = *t
	}
	return p, nil
}
