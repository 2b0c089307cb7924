-- A batch of the fold reads the manifest bodies other records carried
-- from the log's own table (carried_manifests, written with the records
-- in the same transaction), so the state tables no longer keep a copy:
-- a rebuild no longer copies every body before its first page, and each
-- body is stored once fewer.
DROP TABLE IF EXISTS state_manifests;
