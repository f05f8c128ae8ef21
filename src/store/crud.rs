//! The query shapes every table repeats, written once: insert a row and answer it, find one
//! row, list a scope's rows by `seq` after a cursor, a row's cursor position, update with a
//! changeset, mark (an update that answers whether it hit) and delete.
//!
//! [`store_fns!`] generates, per table, the functions its module lists, each named and
//! documented there, with the signature it gives: `db: &Db` first, then its own parameters.
//! Each body runs through [`db_run!`](crate::db_run), so it is compiled for both backends.
//! Only what differs between tables is written per table: the parameters and the filters
//! that select the rows.
//!
//! An illustration (the macro runs only inside this crate's store, so it is not a doctest):
//!
//! ```text
//! store_fns! {
//!     table = agents, row = AgentRow;
//!
//!     /// A developer's agent unless archived.
//!     get pub fn get(developer: &DeveloperId, id: &str)
//!         where developer_id.eq(developer), id.eq(id), status.ne(AgentStatus::Archived);
//! }
//! ```
//!
//! The shapes, by their leading word (`P` are the function's own parameters, `F` its
//! filters: `column.method(args)…`, column of the table):
//! - `insert fn f(row: &R)`: inserts `row`, answers the stored row.
//! - `get fn f(P) where F`: the first row matching, or `None`.
//! - `latest fn f(P) where F`: the matching row of highest `seq`, or `None`.
//! - `all fn f(P) where F`: every matching row, in `seq` order.
//! - `list fn f(P) where F`: matching rows after `seq` `after`, in `seq` order, at most
//!   `limit` (two more parameters, `after: i64, limit: i64`).
//! - `seq fn f(P) where F`: the `seq` of the matching row, or `None`.
//! - `update fn f(P) set (C) where F`: applies `C` to the matching row, answers it after,
//!   or `None`.
//! - `mark fn f(P) set (C) where F`: applies `C`, answers whether exactly one row changed.
//! - `delete fn f(P) where F`: deletes, answers whether exactly one row was deleted.
//!
//! The module invoking it must have `diesel::prelude::*` and `diesel_async::RunQueryDsl` in
//! scope, as every store module does.

/// Generates a table's common query functions; see the [module docs](self).
macro_rules! store_fns {
    (table = $t:ident, row = $row:ident; $($items:tt)*) => {
        $crate::store::crud::store_fns!(@items $t, $row; $($items)*);
    };

    (@items $t:ident, $row:ident;) => {};

    (@items $t:ident, $row:ident;
        $(#[$doc:meta])*
        insert $vis:vis fn $name:ident ($arg:ident : $argt:ty);
        $($rest:tt)*
    ) => {
        $(#[$doc])*
        $vis async fn $name(
            db: &$crate::store::Db,
            $arg: $argt,
        ) -> $crate::store::StoreResult<$row> {
            $crate::db_run!(db, |conn| {
                Ok(diesel::insert_into($t::table)
                    .values($arg)
                    .returning($row::as_returning())
                    .get_result(conn)
                    .await?)
            })
        }
        $crate::store::crud::store_fns!(@items $t, $row; $($rest)*);
    };

    (@items $t:ident, $row:ident;
        $(#[$doc:meta])*
        get $vis:vis fn $name:ident ($($p:ident : $pt:ty),* $(,)?)
            where $($col:ident $(.$op:ident($($a:expr),*))+),+;
        $($rest:tt)*
    ) => {
        $(#[$doc])*
        $vis async fn $name(
            db: &$crate::store::Db,
            $($p: $pt),*
        ) -> $crate::store::StoreResult<Option<$row>> {
            $crate::db_run!(db, |conn| {
                Ok($t::table
                    $(.filter($t::$col $(.$op($($a),*))+))+
                    .select($row::as_select())
                    .first(conn)
                    .await
                    .optional()?)
            })
        }
        $crate::store::crud::store_fns!(@items $t, $row; $($rest)*);
    };

    (@items $t:ident, $row:ident;
        $(#[$doc:meta])*
        latest $vis:vis fn $name:ident ($($p:ident : $pt:ty),* $(,)?)
            where $($col:ident $(.$op:ident($($a:expr),*))+),+;
        $($rest:tt)*
    ) => {
        $(#[$doc])*
        $vis async fn $name(
            db: &$crate::store::Db,
            $($p: $pt),*
        ) -> $crate::store::StoreResult<Option<$row>> {
            $crate::db_run!(db, |conn| {
                Ok($t::table
                    $(.filter($t::$col $(.$op($($a),*))+))+
                    .order($t::seq.desc())
                    .select($row::as_select())
                    .first(conn)
                    .await
                    .optional()?)
            })
        }
        $crate::store::crud::store_fns!(@items $t, $row; $($rest)*);
    };

    (@items $t:ident, $row:ident;
        $(#[$doc:meta])*
        all $vis:vis fn $name:ident ($($p:ident : $pt:ty),* $(,)?)
            where $($col:ident $(.$op:ident($($a:expr),*))+),+;
        $($rest:tt)*
    ) => {
        $(#[$doc])*
        $vis async fn $name(
            db: &$crate::store::Db,
            $($p: $pt),*
        ) -> $crate::store::StoreResult<Vec<$row>> {
            $crate::db_run!(db, |conn| {
                Ok($t::table
                    $(.filter($t::$col $(.$op($($a),*))+))+
                    .order($t::seq.asc())
                    .select($row::as_select())
                    .load(conn)
                    .await?)
            })
        }
        $crate::store::crud::store_fns!(@items $t, $row; $($rest)*);
    };

    (@items $t:ident, $row:ident;
        $(#[$doc:meta])*
        list $vis:vis fn $name:ident ($($p:ident : $pt:ty),* $(,)?)
            where $($col:ident $(.$op:ident($($a:expr),*))+),+;
        $($rest:tt)*
    ) => {
        $(#[$doc])*
        $vis async fn $name(
            db: &$crate::store::Db,
            $($p: $pt,)*
            after: i64,
            limit: i64,
        ) -> $crate::store::StoreResult<Vec<$row>> {
            $crate::db_run!(db, |conn| {
                Ok($t::table
                    $(.filter($t::$col $(.$op($($a),*))+))+
                    .filter($t::seq.gt(after))
                    .order($t::seq.asc())
                    .limit(limit)
                    .select($row::as_select())
                    .load(conn)
                    .await?)
            })
        }
        $crate::store::crud::store_fns!(@items $t, $row; $($rest)*);
    };

    (@items $t:ident, $row:ident;
        $(#[$doc:meta])*
        seq $vis:vis fn $name:ident ($($p:ident : $pt:ty),* $(,)?)
            where $($col:ident $(.$op:ident($($a:expr),*))+),+;
        $($rest:tt)*
    ) => {
        $(#[$doc])*
        $vis async fn $name(
            db: &$crate::store::Db,
            $($p: $pt),*
        ) -> $crate::store::StoreResult<Option<i64>> {
            $crate::db_run!(db, |conn| {
                Ok($t::table
                    $(.filter($t::$col $(.$op($($a),*))+))+
                    .select($t::seq)
                    .first(conn)
                    .await
                    .optional()?)
            })
        }
        $crate::store::crud::store_fns!(@items $t, $row; $($rest)*);
    };

    (@items $t:ident, $row:ident;
        $(#[$doc:meta])*
        update $vis:vis fn $name:ident ($($p:ident : $pt:ty),* $(,)?)
            set ($changes:expr)
            where $($col:ident $(.$op:ident($($a:expr),*))+),+;
        $($rest:tt)*
    ) => {
        $(#[$doc])*
        $vis async fn $name(
            db: &$crate::store::Db,
            $($p: $pt),*
        ) -> $crate::store::StoreResult<Option<$row>> {
            $crate::db_run!(db, |conn| {
                Ok(diesel::update($t::table $(.filter($t::$col $(.$op($($a),*))+))+)
                    .set($changes)
                    .returning($row::as_returning())
                    .get_result(conn)
                    .await
                    .optional()?)
            })
        }
        $crate::store::crud::store_fns!(@items $t, $row; $($rest)*);
    };

    (@items $t:ident, $row:ident;
        $(#[$doc:meta])*
        mark $vis:vis fn $name:ident ($($p:ident : $pt:ty),* $(,)?)
            set ($changes:expr)
            where $($col:ident $(.$op:ident($($a:expr),*))+),+;
        $($rest:tt)*
    ) => {
        $(#[$doc])*
        $vis async fn $name(
            db: &$crate::store::Db,
            $($p: $pt),*
        ) -> $crate::store::StoreResult<bool> {
            $crate::db_run!(db, |conn| {
                let changed = diesel::update($t::table $(.filter($t::$col $(.$op($($a),*))+))+)
                    .set($changes)
                    .execute(conn)
                    .await?;
                Ok(changed == 1)
            })
        }
        $crate::store::crud::store_fns!(@items $t, $row; $($rest)*);
    };

    (@items $t:ident, $row:ident;
        $(#[$doc:meta])*
        delete $vis:vis fn $name:ident ($($p:ident : $pt:ty),* $(,)?)
            where $($col:ident $(.$op:ident($($a:expr),*))+),+;
        $($rest:tt)*
    ) => {
        $(#[$doc])*
        $vis async fn $name(
            db: &$crate::store::Db,
            $($p: $pt),*
        ) -> $crate::store::StoreResult<bool> {
            $crate::db_run!(db, |conn| {
                let deleted = diesel::delete($t::table $(.filter($t::$col $(.$op($($a),*))+))+)
                    .execute(conn)
                    .await?;
                Ok(deleted == 1)
            })
        }
        $crate::store::crud::store_fns!(@items $t, $row; $($rest)*);
    };
}

pub(crate) use store_fns;
