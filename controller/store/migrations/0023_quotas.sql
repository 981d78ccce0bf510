-- Limits an admin set through the server (`sortie server quotas set`),
-- beside config.yaml's limits: section. A row replaces config.yaml's entry
-- of its scope; removing it (`quotas unset`) gives config.yaml's back.
--
-- scope: server | per_user | user | group; name: the user's or group's
-- name, '' for server and per_user. amounts: the limit as JSON counts, as
-- jobs.ask ({"jobs":20,"gpu:A100":16}); '{}' limits nothing (the scope is
-- not limited, whatever config.yaml says). members: a group's users, a
-- JSON list; '' for other scopes.
CREATE TABLE quotas (
    scope   TEXT NOT NULL,
    name    TEXT NOT NULL DEFAULT '',
    amounts TEXT NOT NULL,
    members TEXT NOT NULL DEFAULT '',
    set_at  TEXT NOT NULL,
    set_by  TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (scope, name)
);
