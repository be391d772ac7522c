-- name: CreateProject :one
INSERT INTO projects (name) VALUES (@name)
RETURNING *;

-- name: GetProject :one
SELECT * FROM projects WHERE id = @id;

-- name: GetProjectByName :one
SELECT * FROM projects WHERE name = @name;

-- name: ListProjects :many
SELECT * FROM projects ORDER BY name;

-- name: CountProjects :one
SELECT count(*) FROM projects;
