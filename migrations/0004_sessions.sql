-- Sign-in sessions, stored server side. The cookie holds a random token; the
-- table keeps only its SHA-256, so a leaked table does not leak sessions.
create table platform.sessions (
  id text primary key,
  sandbox_id uuid not null references platform.sandboxes (id),
  -- null for a guest (a storefront visitor who has not signed in)
  name text check (length(name) between 1 and 80),
  csrf_token text not null,
  created_at timestamptz not null default now(),
  last_seen_at timestamptz not null default now(),
  -- set at sign-out or rotation; an ended session is never valid again
  ended_at timestamptz
);
create index sessions_by_sandbox on platform.sessions (sandbox_id);
