-- Bodies at rest, compressed (store/body-encoding.ts; D1: 0014): the encoding of the stored body,
-- 'deflate-raw' when it is compressed. NULL is the body as received: every row stored before this
-- migration, and a body too short or too dense to gain from compression. Retention clears it with
-- the body.
ALTER TABLE deliveries ADD COLUMN body_encoding text COLLATE "C";
