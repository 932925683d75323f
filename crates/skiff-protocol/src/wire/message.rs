//! `message!`: declares one struct of a message schema and its codec from a single field
//! list, so that the struct, its reader and its writer cannot disagree on field order or
//! versions.
//!
//! Each field is `name: Type [versions] = default`: `versions` is one of
//! [`crate::wire::ALL`], `since(n)`, `since_ignorable(n)`, `only(n)`; `default` is the value a
//! version without the field decodes to, and the only value such a version may be asked to
//! encode (unless ignorable). Every struct also gets `unknown_tagged_fields`. A struct used
//! as a nullable field (`Option<Struct>`) is coded with Kafka's int8 presence marker.
//!
//! Thread-safety: compile-time only. No on-disk format.

macro_rules! message {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $(
                $(#[$fmeta:meta])*
                $field:ident : $ty:ty [$vers:expr] = $default:expr
            ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq)]
        pub struct $name {
            $(
                $(#[$fmeta])*
                pub $field: $ty,
            )*
            /// Tagged fields the schema does not define, kept as read and written back.
            pub unknown_tagged_fields: $crate::wire::TaggedFields,
        }

        impl Default for $name {
            fn default() -> Self {
                $name {
                    $($field: $default,)*
                    unknown_tagged_fields: $crate::wire::TaggedFields::default(),
                }
            }
        }

        impl $crate::wire::Wire for $name {
            fn read(
                r: &mut $crate::wire::Reader<'_>,
                version: i16,
            ) -> Result<Self, $crate::guard::GuardError> {
                let mut out = Self::default();
                $(
                    if ($vers).has(version) {
                        out.$field = $crate::wire::Wire::read(r, version).map_err(|e| {
                            $crate::guard::GuardError {
                                offset: e.offset,
                                what: format!("{}: {}", stringify!($field), e.what),
                            }
                        })?;
                    }
                )*
                out.unknown_tagged_fields = $crate::wire::TaggedFields::read(r)?;
                Ok(out)
            }

            fn write(&self, w: &mut bytes::BytesMut, version: i16) -> Result<(), String> {
                $(
                    if ($vers).has(version) {
                        $crate::wire::Wire::write(&self.$field, w, version)?;
                    } else if !($vers).ignorable() && {
                        let default: $ty = $default;
                        self.$field != default
                    } {
                        return Err(format!(
                            "{}.{} does not exist in version {} and is not its default",
                            stringify!($name),
                            stringify!($field),
                            version
                        ));
                    }
                )*
                self.unknown_tagged_fields.write(w)
            }
        }

        impl $crate::wire::Nullable for $name {
            fn read_nullable(
                r: &mut $crate::wire::Reader<'_>,
                version: i16,
            ) -> Result<Option<Self>, $crate::guard::GuardError> {
                let marker = <i8 as $crate::wire::Wire>::read(r, version)?;
                if marker < 0 {
                    return Ok(None);
                }
                <Self as $crate::wire::Wire>::read(r, version).map(Some)
            }

            fn write_nullable(
                this: Option<&Self>,
                w: &mut bytes::BytesMut,
                version: i16,
            ) -> Result<(), String> {
                use bytes::BufMut;
                match this {
                    None => {
                        w.put_i8(-1);
                        Ok(())
                    }
                    Some(s) => {
                        w.put_i8(1);
                        <Self as $crate::wire::Wire>::write(s, w, version)
                    }
                }
            }
        }
    };
}
