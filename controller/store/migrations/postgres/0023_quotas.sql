-- PostgreSQL twin of ../0023_quotas.sql.
CREATE TABLE quotas (
    scope   TEXT COLLATE "C" NOT NULL,
    name    TEXT COLLATE "C" NOT NULL DEFAULT '',
    amounts TEXT COLLATE "C" NOT NULL,
    members TEXT COLLATE "C" NOT NULL DEFAULT '',
    set_at  TEXT COLLATE "C" NOT NULL,
    set_by  TEXT COLLATE "C" NOT NULL DEFAULT '',
    PRIMARY KEY (scope, name)
);
