-- Prices, as sortie read them from the clouds' APIs and config.yaml: one
-- row per price of one key (cloud, region, zone, instance type, spot) and
-- the time it took effect, so that a cost can be counted over the prices
-- in effect while an attempt ran. A refresh that reads the same price
-- again only moves read_at; a quote whose read_at is older than its
-- refresh interval is stale (the API could not be reached).
CREATE TABLE prices (
    cloud         TEXT NOT NULL,
    region        TEXT NOT NULL,
    zone          TEXT NOT NULL,
    instance_type TEXT NOT NULL,
    spot          INTEGER NOT NULL,
    effective_at  TEXT NOT NULL,
    per_hour      REAL NOT NULL,
    source        TEXT NOT NULL,
    read_at       TEXT NOT NULL,
    PRIMARY KEY (cloud, region, zone, instance_type, spot, effective_at)
);
