-- PostgreSQL twin of ../0018_prices.sql.
CREATE TABLE prices (
    cloud         TEXT COLLATE "C" NOT NULL,
    region        TEXT COLLATE "C" NOT NULL,
    zone          TEXT COLLATE "C" NOT NULL,
    instance_type TEXT COLLATE "C" NOT NULL,
    spot          INTEGER NOT NULL,
    effective_at  TEXT COLLATE "C" NOT NULL,
    per_hour      DOUBLE PRECISION NOT NULL,
    source        TEXT COLLATE "C" NOT NULL,
    read_at       TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (cloud, region, zone, instance_type, spot, effective_at)
);
