-- Orders live in PostgreSQL 16.
CREATE TABLE orders (
    id uuid PRIMARY KEY,
    status text NOT NULL DEFAULT 'pending',
    total_cents bigint NOT NULL
);
