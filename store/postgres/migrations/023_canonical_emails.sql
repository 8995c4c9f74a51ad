-- E-mail addresses are kept and compared in one canonical form (store.CanonicalEmail): the
-- ASCII letters lower-cased and nothing else. lower() folds more than ASCII (what it folds
-- depends on the collation), so "one form everywhere" means the stored value itself, compared
-- as bytes. No two rows can collide: the old index was on lower(email), which folds at least
-- as much as this.
UPDATE users SET email = translate(email, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz')
    WHERE email <> translate(email, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz');
DROP INDEX users_email;
CREATE UNIQUE INDEX users_email ON users (email);

-- Invitations were lower-cased with Go's Unicode ToLower, which maps the Kelvin sign to "k";
-- they keep what they have, and their e-mail is compared as bytes from now on.
UPDATE invitations SET email = translate(email, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz')
    WHERE email <> translate(email, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz');
